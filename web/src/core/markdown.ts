/**
 * A small, safe Markdown renderer: the source is HTML-escaped first, so no tag, attribute
 * or script from the text can reach the DOM; only the constructs below produce markup.
 * Links keep http(s), mailto and relative URLs only. Supported: headings, paragraphs,
 * fenced and inline code, **bold**, *italic*, lists, tables (pipes), links, hard rules.
 *
 * The renderer's own output then goes through DOMPurify, a maintained sanitizer, with an
 * allow-list of exactly these tags and attributes: a hole in the hand-written rules above
 * (as `[a](\x01javascript:...)` was: browsers drop leading control characters from a URL)
 * cannot reach the page.
 */

import DOMPurify from "dompurify";

const TAGS = ["p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre", "ul", "ol", "li", "a", "hr", "table", "thead", "tbody", "tr", "th", "td"];
const ATTRS = ["href", "rel", "target"];
// DOMPurify's own URL rule, narrowed to http(s), mailto and relative URLs (no scheme)
const URLS = /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i;

function sanitize(html: string): string {
  if (!DOMPurify.isSupported) return html; // no DOM (a worker or a test): escaped output only
  return DOMPurify.sanitize(html, { ALLOWED_TAGS: TAGS, ALLOWED_ATTR: ATTRS, ALLOWED_URI_REGEXP: URLS });
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function safeUrl(escapedUrl: string): string | null {
  const raw = escapedUrl.replace(/&amp;/g, "&");
  // control characters and spaces are stripped or ignored by browsers' URL parsers
  if (/[\u0000-\u0020\u007f-\u009f]/.test(raw)) return null;
  if (/^(https?:|mailto:)/i.test(raw)) return escapedUrl;
  if (/^[a-z][a-z0-9+.-]*:/i.test(raw) || raw.startsWith("//")) return null;
  return escapedUrl;
}

function inline(escaped: string): string {
  const codes: string[] = [];
  let s = escaped.replace(/`([^`]+)`/g, (_m, code: string) => {
    codes.push(`<code>${code}</code>`);
    return `\u0000${codes.length - 1}\u0000`;
  });
  s = s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
  s = s.replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
  s = s.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_m, label: string, url: string) => {
    const href = safeUrl(url);
    return href === null ? label : `<a href="${href}" rel="noopener noreferrer" target="_blank">${label}</a>`;
  });
  return s.replace(/\u0000(\d+)\u0000/g, (_m, i: string) => codes[Number(i)] ?? "");
}

function isTableRow(line: string): boolean {
  return /^\s*\|.*\|\s*$/.test(line);
}

function cells(line: string): string[] {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

export function renderMarkdown(source: string): string {
  const lines = escapeHtml(source.replace(/\r\n?/g, "\n")).split("\n");
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (/^```/.test(line)) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !/^```/.test(lines[i] as string)) body.push(lines[i++] as string);
      i++;
      out.push(`<pre><code>${body.join("\n")}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = (heading[1] as string).length;
      out.push(`<h${level}>${inline(heading[2] as string)}</h${level}>`);
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push("<hr>");
      i++;
      continue;
    }
    if (/^\s*([-*+]|\d+\.)\s+/.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const items: string[] = [];
      while (i < lines.length && /^\s*([-*+]|\d+\.)\s+/.test(lines[i] as string)) {
        items.push(`<li>${inline((lines[i] as string).replace(/^\s*([-*+]|\d+\.)\s+/, ""))}</li>`);
        i++;
      }
      const tag = ordered ? "ol" : "ul";
      out.push(`<${tag}>${items.join("")}</${tag}>`);
      continue;
    }
    if (isTableRow(line) && i + 1 < lines.length && /^\s*\|[\s:|-]+\|\s*$/.test(lines[i + 1] as string)) {
      const head = cells(line).map((c) => `<th>${inline(c)}</th>`).join("");
      i += 2;
      const rows: string[] = [];
      while (i < lines.length && isTableRow(lines[i] as string)) {
        rows.push(`<tr>${cells(lines[i] as string).map((c) => `<td>${inline(c)}</td>`).join("")}</tr>`);
        i++;
      }
      out.push(`<table><thead><tr>${head}</tr></thead><tbody>${rows.join("")}</tbody></table>`);
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && (lines[i] as string).trim() !== "" && !/^(```|#{1,6}\s)/.test(lines[i] as string)) {
      para.push(inline(lines[i] as string));
      i++;
    }
    out.push(`<p>${para.join("<br>")}</p>`);
  }
  return sanitize(out.join("\n"));
}
