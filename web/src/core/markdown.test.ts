// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { escapeHtml, renderMarkdown } from "./markdown";

const ALLOWED = ["p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre", "ul", "ol", "li", "a", "hr", "table", "thead", "tbody", "tr", "th", "td"];

describe("renderMarkdown", () => {
  it("renders the common subset", () => {
    const html = renderMarkdown("# Title\n\n**bold** *it* `x<y`\n\n- a\n- b\n\n| h |\n|---|\n| c |");
    expect(html).toContain("<h1>Title</h1>");
    expect(html).toContain("<strong>bold</strong>");
    expect(html).toContain("<em>it</em>");
    expect(html).toContain("<code>x&lt;y</code>");
    expect(html).toContain("<ul><li>a</li><li>b</li></ul>");
    expect(html).toContain("<th>h</th>");
    expect(html).toContain("<td>c</td>");
  });
  it("never lets markup through", () => {
    const attacks = [
      "<script>alert(1)</script>",
      '<img src=x onerror="alert(1)">',
      "[click](javascript:alert(1))",
      "[click](JaVaScRiPt:alert(1))",
      '[x](http://a" onmouseover="alert(1))',
      "```\n</code><script>alert(1)</script>\n```",
      "<svg/onload=alert(1)>",
      "[x](data:text/html;base64,PHNjcmlwdD4=)",
      "[a](\u0001javascript:alert(1))",
      "[a](\u0000javascript:alert(1))",
      "[a](java\tscript:alert(1))",
      "[a](\u007fjavascript:alert(1))",
    ];
    for (const a of attacks) {
      const html = renderMarkdown(a);
      for (const m of html.matchAll(/<\/?([a-zA-Z0-9]+)([^>]*)>/g)) {
        expect(ALLOWED).toContain((m[1] as string).toLowerCase());
        const attrs = m[2] as string;
        expect(attrs).toMatch(/^(\s+(href|rel|target)="[^"<>]*")*\s*$/);
        expect(attrs).not.toMatch(/href="\s*(javascript|data|vbscript):/i);
      }
    }
  });
  it("is sanitized by DOMPurify in a DOM", async () => {
    const DOMPurify = (await import("dompurify")).default;
    expect(DOMPurify.isSupported).toBe(true);
    // the sanitizer drops what the renderer would let through by mistake
    const html = renderMarkdown("[a](\u0001javascript:alert(1))");
    const doc = new DOMParser().parseFromString(html, "text/html");
    for (const a of Array.from(doc.querySelectorAll("a"))) expect(a.protocol).not.toBe("javascript:");
  });
  it("keeps safe links", () => {
    expect(renderMarkdown("[docs](https://example.com/a?b=1&c=2)")).toContain('href="https://example.com/a?b=1&amp;c=2"');
    expect(renderMarkdown("[rel](notes/a.md)")).toContain('href="notes/a.md"');
  });
  it("escapes all five HTML characters", () => {
    expect(escapeHtml(`<>&"'`)).toBe("&lt;&gt;&amp;&quot;&#39;");
  });
});
