// The one-file report's entry (viz/browser_code.py's "report_file" bundle, viz/report_file.py): set up
// the overview's reports, then the frames that are loaded on demand (report_lazy.js). The script comes
// after the overview and before the frames' payloads.
import { setUpReports } from "./report.js";
import { setUpLazyFrames } from "./report_lazy.js";

setUpReports(document);
setUpLazyFrames(document);
