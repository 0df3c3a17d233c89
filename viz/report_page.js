// The static page's entry (viz/browser_code.py's "report" bundle): set up every report of the
// document once, and the one-file report's frames that are loaded on demand (report_lazy.js); the
// script follows the reports it sets up.
import { setUpReports } from "./report.js";
import { setUpLazyFrames } from "./report_lazy.js";

setUpReports(document);
setUpLazyFrames(document);
