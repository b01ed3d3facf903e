// The only way the dashboard builds DOM. Strings always become Text nodes and attributes are
// set with setAttribute, so a label that arrived through ingestion (a model called
// `<img src=x onerror=alert(1)>`) can never become markup. There is deliberately no helper
// that takes HTML.

export type Child = Node | string | number | null | undefined | false;
export type Children = Child | readonly Children[];

type Listener = (event: Event) => void;
export type Attrs = Record<string, string | number | boolean | null | undefined | Listener>;

function append(parent: Node, child: Children): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child as readonly Children[]) append(parent, c);
  } else if (child instanceof Node) {
    parent.appendChild(child);
  } else {
    parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Creates an element. Keys starting with `on` take functions only (listeners); `true`
 *  sets an empty boolean attribute; null/undefined/false leave the attribute out. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Children[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith('on')) {
        if (typeof value !== 'function') throw new TypeError(`${key}: expected a function`);
        el.addEventListener(key.slice(2).toLowerCase(), value);
      } else if (typeof value === 'function') {
        throw new TypeError(`${key}: a function is only allowed for on* listeners`);
      } else {
        el.setAttribute(key, value === true ? '' : String(value));
      }
    }
  }
  append(el, children);
  return el;
}

/** Replaces all children of `el`. */
export function replaceChildren(el: Element, ...children: Children[]): void {
  el.replaceChildren();
  append(el, children);
}

/** Text that screen readers read but sighted users do not see (units, sample counts). */
export function srOnly(text: string): HTMLSpanElement {
  return h('span', { class: 'sr-only' }, text);
}
