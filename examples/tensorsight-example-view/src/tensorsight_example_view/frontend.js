// Front end of the example "tag_counts" view: one row per selected run, one column per data
// kind. The board serves this file at /views/tag_counts/index.js and the shell imports it;
// like a built-in view it exports render(el, ctx) returning { refresh, dispose }.
// ctx.state is the board's shared state: selectedRuns(), color(run), subscribe(fn).

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function cell(tag, text) {
  const el = document.createElement(tag);
  el.textContent = text;
  return el;
}

export function render(el, ctx) {
  const note = cell("p", "");
  note.className = "tag-counts-note";
  const table = document.createElement("table");
  table.className = "tag-counts";
  el.append(note, table);
  let ticket = 0;

  async function load() {
    const mine = ++ticket;
    const runs = ctx.state.selectedRuns();
    if (runs.length === 0) {
      table.replaceChildren();
      note.textContent = "Select runs on the left.";
      return;
    }
    const query = runs.map((r) => `run=${encodeURIComponent(r)}`).join("&");
    const response = await fetch(`/api/views/tag_counts/counts?${query}`);
    const body = await response.json();
    if (mine !== ticket) return; // a newer load started, or the view was closed
    if (!response.ok) {
      table.replaceChildren();
      note.textContent = body.error.message;
      return;
    }
    note.textContent = `${plural(body.runs.length, "run")}, ${plural(body.kinds.length, "data kind")}`;
    const head = document.createElement("tr");
    head.append(cell("th", "run"), ...body.kinds.map((k) => cell("th", k)));
    const rows = body.runs.map((row) => {
      const tr = document.createElement("tr");
      tr.dataset.run = row.run;
      const name = cell("td", row.run);
      name.style.borderLeft = `4px solid ${ctx.state.color(row.run)}`;
      tr.append(name, ...body.kinds.map((k) => cell("td", String(row.counts[k] ?? 0))));
      return tr;
    });
    table.replaceChildren(head, ...rows);
  }

  void load();
  return {
    refresh() {
      void load();
    },
    dispose() {
      ticket++;
    },
  };
}
