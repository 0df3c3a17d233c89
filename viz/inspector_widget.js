// The explorer's inspector widget (viz/inspector.py Inspector): anywidget's render() around
// drawInspector (inspector.js). Python sends the selected node's facts (the synced `info`, a
// viz.node_info dict) and a `note`; the panel is redrawn when either changes.
import { drawInspector } from "./inspector.js";

function render({ model, el }) {
  el.classList.add("ds-inspector-host");
  const draw = () => drawInspector(el, model.get("info"), model.get("note"));
  model.on("change:info", draw);
  model.on("change:note", draw);
  draw();
  return () => {
    model.off("change:info", draw);
    model.off("change:note", draw);
  };
}

export default { render };
