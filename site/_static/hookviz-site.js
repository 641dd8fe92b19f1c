/* The course site's small scripts: filterable, sortable tables (the hook atlas) and the search page. */
(function () {
  "use strict";

  /* ---------------------------------------------------------------------------------------- tables */
  function cellText(row, column) {
    const cell = row.cells[column];
    return cell ? cell.textContent.trim() : "";
  }

  function makeSortable(table) {
    const head = table.tHead;
    const body = table.tBodies[0];
    if (!head || !body) return;
    Array.from(head.rows[0].cells).forEach((th, column) => {
      th.classList.add("hv-sortable");
      th.setAttribute("role", "button");
      th.tabIndex = 0;
      const sort = () => {
        const ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.from(head.rows[0].cells).forEach((other) => other.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        const rows = Array.from(body.rows);
        rows.sort((a, b) => {
          const x = cellText(a, column), y = cellText(b, column);
          const nx = parseFloat(x), ny = parseFloat(y);
          const c = !isNaN(nx) && !isNaN(ny) && String(nx) === x && String(ny) === y ? nx - ny
            : x.localeCompare(y, undefined, {numeric: true});
          return ascending ? c : -c;
        });
        rows.forEach((row) => body.appendChild(row));
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); } });
    });
  }

  function makeFilterable(container, table) {
    const body = table.tBodies[0];
    if (!body) return;
    const input = document.createElement("input");
    input.type = "search";
    input.className = "hv-filter form-control";
    input.placeholder = container.dataset.placeholder || "Filter the rows …";
    input.setAttribute("aria-label", input.placeholder);
    const count = document.createElement("span");
    count.className = "hv-filter-count";
    const total = body.rows.length;
    const update = () => {
      const words = input.value.toLowerCase().split(/\s+/).filter((w) => w);
      let shown = 0;
      Array.from(body.rows).forEach((row) => {
        const text = row.textContent.toLowerCase() + " " + Array.from(row.querySelectorAll("[title]"))
          .map((e) => e.title.toLowerCase()).join(" ");
        const ok = words.every((w) => text.includes(w));
        row.hidden = !ok;
        if (ok) shown += 1;
      });
      count.textContent = shown + " / " + total;
    };
    input.addEventListener("input", update);
    const bar = document.createElement("div");
    bar.className = "hv-filter-bar";
    bar.append(input, count);
    container.insertBefore(bar, container.firstChild);
    update();
  }

  function enhanceTables() {
    document.querySelectorAll(".hv-filterable").forEach((container) => {
      const table = container.querySelector("table");
      if (table) { makeFilterable(container, table); makeSortable(table); }
    });
    // a long table in a notebook's stored output (the atlas of notebook 16): sortable and filterable too
    document.querySelectorAll(".cell_output table").forEach((table) => {
      if (table.closest(".hv-filterable") || !table.tBodies[0] || table.tBodies[0].rows.length < 40) return;
      const container = table.parentElement;
      container.classList.add("hv-filterable");
      makeFilterable(container, table);
      makeSortable(table);
    });
  }

  /* ---------------------------------------------------------------------------------------- search page */
  const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]/;

  function element(tag, attributes, text) {
    const e = document.createElement(tag);
    Object.entries(attributes || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  let pagefind = null;

  async function pageResults(root, question, list) {
    list.replaceChildren();
    try {
      if (!pagefind) {
        pagefind = await import(new URL(root.dataset.pagefind + "pagefind.js", document.baseURI).href);
        await pagefind.init();
      }
      const found = await pagefind.search(question);
      const data = await Promise.all(found.results.slice(0, 8).map((r) => r.data()));
      for (const page of data) {
        const item = element("li", {"class": "hv-page"});
        const best = (page.sub_results || [])[0] || page;  // the section of the page with the words, where known
        // Pagefind's URLs start with the folder its bundle is served from (/hookviz/ on GitHub Pages)
        const link = element("a", {href: best.url}, page.meta.title || page.url);
        const excerpt = element("p", {"class": "hv-excerpt"});
        excerpt.innerHTML = best.excerpt;  // Pagefind's excerpt: the page's text, escaped, with <mark>
        item.append(link, excerpt);
        list.append(item);
      }
      if (!data.length) list.append(element("li", {"class": "hv-none"}, root.dataset.noPages));
    } catch (error) {
      list.append(element("li", {"class": "hv-none"}, String(error)));
    }
  }

  async function answers(root, question, list) {
    list.replaceChildren();
    const chinese = root.dataset.language !== "en" || CJK.test(question);
    const index = await window.hookvizAsk.load(chinese ? root.dataset.indexZh : root.dataset.index);
    const prefix = chinese ? root.dataset.prefixZh : "";
    const labels = JSON.parse(root.dataset.sources);
    const found = index.search(question, 10);
    for (const answer of found) {
      const item = element("li", {"class": "hv-answer", "data-link": answer.link});
      const link = element("a", {href: prefix + answer.url}, answer.title);
      const where = element("span", {"class": "hv-where"}, " · " + (labels[answer.source] || answer.source));
      item.append(link, where, element("p", {"class": "hv-excerpt"}, answer.summary));
      list.append(item);
    }
    if (!found.length) list.append(element("li", {"class": "hv-none"}, root.dataset.none));
    return found;
  }

  function searchPage() {
    const root = document.getElementById("hv-search");
    if (!root) return;
    const input = document.getElementById("hv-q");
    const run = async () => {
      const question = input.value.trim();
      const url = new URL(window.location.href);
      if (question) url.searchParams.set("q", question); else url.searchParams.delete("q");
      window.history.replaceState(null, "", url);
      if (!question) return;
      root.classList.add("hv-busy");
      await Promise.all([
        answers(root, question, document.getElementById("hv-answers")),
        pageResults(root, question, document.getElementById("hv-pages")),
      ]);
      root.classList.remove("hv-busy");
      root.dataset.done = question;
    };
    input.closest("form").addEventListener("submit", (e) => { e.preventDefault(); run(); });
    input.value = new URLSearchParams(window.location.search).get("q") || "";
    input.focus();
    if (input.value) run();
  }

  document.addEventListener("DOMContentLoaded", () => { enhanceTables(); searchPage(); });
})();
