// The minimap: the whole drawing in a small canvas in the corner of the stage, with the part
// in view outlined. Clicking or dragging on it moves the view there.
import type { Laid } from "./layout";
import type { Stage } from "./stage";

const FILL: Record<string, string> = { scope: "#bcd0ee", group: "#b5dcc0", param: "#dddddd", io: "#f3d596", op: "#c9ced6" };

export interface MiniItem {
  id: string;
  kind: string; // a key of FILL, or "cluster"
}

export class Minimap {
  readonly canvas: HTMLCanvasElement;
  private rects: { x: number; y: number; w: number; h: number; kind: string }[] = [];
  private width = 1;
  private height = 1;
  private readonly stage: Stage;

  constructor(host: HTMLElement, stage: Stage) {
    this.stage = stage;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "graph-minimap";
    this.canvas.id = "graph-minimap";
    this.canvas.width = 200;
    this.canvas.height = 140;
    host.append(this.canvas);
    let dragging = false;
    const go = (ev: MouseEvent): void => {
      const r = this.canvas.getBoundingClientRect();
      const { s, ox, oy } = this.fitting();
      stage.centerOn((ev.clientX - r.left - ox) / s, (ev.clientY - r.top - oy) / s, false);
    };
    this.canvas.addEventListener("mousedown", (ev) => {
      ev.stopPropagation(); // not a pan of the stage
      dragging = true;
      go(ev);
    });
    window.addEventListener("mousemove", (ev) => {
      if (dragging) go(ev);
    });
    window.addEventListener("mouseup", () => {
      dragging = false;
    });
    this.canvas.addEventListener("wheel", (ev) => ev.stopPropagation());
  }

  /** Scale and offset that fit the drawing into the canvas. */
  private fitting(): { s: number; ox: number; oy: number } {
    const s = Math.min((this.canvas.width - 8) / this.width, (this.canvas.height - 8) / this.height);
    return { s, ox: (this.canvas.width - this.width * s) / 2, oy: (this.canvas.height - this.height * s) / 2 };
  }

  setContent(laid: Laid, items: MiniItem[]): void {
    this.width = Math.max(1, laid.width);
    this.height = Math.max(1, laid.height);
    this.rects = [];
    for (const it of items) {
      const n = laid.node(it.id);
      if (n) this.rects.push({ x: n.x - n.width / 2, y: n.y - n.height / 2, w: n.width, h: n.height, kind: it.kind });
    }
    this.draw();
  }

  clear(): void {
    this.rects = [];
    this.draw();
  }

  draw(): void {
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    const { s, ox, oy } = this.fitting();
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    for (const r of this.rects) {
      if (r.kind === "cluster") {
        ctx.strokeStyle = "#9fb3d1";
        ctx.strokeRect(ox + r.x * s, oy + r.y * s, Math.max(1, r.w * s), Math.max(1, r.h * s));
      } else {
        ctx.fillStyle = FILL[r.kind] ?? "#c9ced6";
        ctx.fillRect(ox + r.x * s, oy + r.y * s, Math.max(1, r.w * s), Math.max(1, r.h * s));
      }
    }
    // the part of the drawing in view
    const view = this.stage.viewBox();
    ctx.strokeStyle = "#d9480f";
    ctx.lineWidth = 1.5;
    ctx.strokeRect(ox + view.x * s, oy + view.y * s, view.width * s, view.height * s);
    ctx.lineWidth = 1;
    this.canvas.dataset.view = [view.x, view.y, view.width, view.height].map((v) => v.toFixed(0)).join(",");
  }
}
