// A tiny DOM, enough for porcupine's page: runs its script and prints the SVG text it drew.
const fs = require('fs')
const html = fs.readFileSync(process.argv[2], 'utf8')
const script = html.match(/<script[^>]*>([\s\S]*?)<\/script>/g).map(s => s.replace(/<\/?script[^>]*>/g, '')).join('\n')
class El {
  constructor(tag) { this.tag = tag; this.attrs = {}; this.children = []; this.textContent = ''; this.style = {}; this.classList = {add(){}, remove(){}, contains(){return false}, toggle(){}} }
  setAttribute(k, v) { this.attrs[k] = v }
  setAttributeNS(_, k, v) { this.attrs[k] = v }
  getAttribute(k) { return this.attrs[k] }
  appendChild(c) { c.parentElement = this; this.children.push(c); return c }
  append(...cs) { for (const c of cs) this.children.push(c) }
  prepend(c) { this.children.unshift(c) }
  removeChild() {}
  remove() {}
  insertBefore(c) { this.children.push(c); return c }
  addEventListener() {}
  getBBox() { return {width: String(this.textContent).length * 7, height: 14, x: 0, y: 0} }
  getBoundingClientRect() { return {width: 100, height: 20, left: 0, top: 0} }
  querySelector() { return new El('q') }
  querySelectorAll() { return [] }
  set innerHTML(v) { this.children = [] }
  get innerHTML() { return '' }
}
const byId = {}
global.document = {
  createElementNS: (_, t) => new El(t), createElement: t => new El(t), createTextNode: t => ({textContent: t}),
  querySelector: q => (byId[q] ??= new El(q)), getElementById: q => (byId['#' + q] ??= new El(q)),
  addEventListener() {}, body: new El('body'),
}
global.window = {addEventListener() {}, getComputedStyle: () => ({})}
try { eval(script) } catch (e) { console.error("after drawing:", e.message) }
const out = []
const walk = (e) => { if (e.tag === 'text') out.push([e.attrs.x, e.attrs.y, String(e.textContent)]); for (const c of e.children || []) walk(c) }
walk(byId['#canvas'])
console.log(JSON.stringify(out))
