// The static page's entry (viz/browser_code.py's "report" bundle): set up every report of the
// document once; the script follows the reports it sets up.
import { setUpReports } from "./report.js";

setUpReports(document);
