// A tiny DOM, enough for porcupine's page: runs its script and prints the SVG text it drew.
// With --tooltips it hovers over every operation instead and prints what the page put into
// innerHTML (where history text would run as markup).
const fs = require('fs')
const html = fs.readFileSync(process.argv[2], 'utf8')
const script = html.match(/<script[^>]*>([\s\S]*?)<\/script>/g).map(s => s.replace(/<\/?script[^>]*>/g, '')).join('\n')
class El {
  constructor(tag) { this.tag = tag; this.attrs = {}; this.children = []; this.textContent = ''; this.style = {}; this.dataset = {}; this.listeners = {}; this.classList = {add(){}, remove(){}, contains(){return false}, toggle(){}} }
  setAttribute(k, v) { this.attrs[k] = v; if (k.startsWith('data-')) this.dataset[k.slice(5)] = String(v) }
  setAttributeNS(_, k, v) { this.setAttribute(k, v) }
  getAttribute(k) { return this.attrs[k] }
  appendChild(c) { c.parentElement = this; this.children.push(c); return c }
  append(...cs) { for (const c of cs) this.children.push(c) }
  prepend(c) { this.children.unshift(c) }
  removeChild() {}
  remove() {}
  insertBefore(c) { this.children.push(c); return c }
  addEventListener(kind, f) { this.listeners[kind] = f }
  getBBox() { return {width: String(this.textContent).length * 7, height: 14, x: 0, y: 0} }
  getBoundingClientRect() { return {width: 100, height: 20, left: 0, top: 0} }
  querySelector() { return new El('q') }
  querySelectorAll() { return [] }
  set innerHTML(v) { this.children = []; if (v !== '') markup.push(String(v)) }
  get innerHTML() { return '' }
}
const byId = {}
const markup = []
global.document = {
  createElementNS: (_, t) => new El(t), createElement: t => new El(t), createTextNode: t => ({textContent: t}),
  querySelector: q => (byId[q] ??= new El(q)), getElementById: q => (byId['#' + q] ??= new El(q)),
  addEventListener() {}, body: new El('body'), documentElement: {scrollLeft: 0, clientWidth: 1000},
}
global.window = {addEventListener() {}, getComputedStyle: () => ({})}
try { eval(script) } catch (e) { console.error("after drawing:", e.message) }
if (process.argv[3] === '--tooltips') {
  const hover = (e) => { if (e.listeners && e.listeners.mousemove) e.listeners.mousemove.call(e, {pageX: 0, pageY: 0}); for (const c of e.children || []) hover(c) }
  hover(byId['#canvas'])
  console.log(JSON.stringify(markup))
  process.exit(0)
}
const out = []
const walk = (e) => { if (e.tag === 'text') out.push([e.attrs.x, e.attrs.y, String(e.textContent)]); for (const c of e.children || []) walk(c) }
walk(byId['#canvas'])
console.log(JSON.stringify(out))
