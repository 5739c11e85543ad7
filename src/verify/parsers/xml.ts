import { MAX_XML_DEPTH } from './limits.js';

/**
 * A small, bounded XML event reader for test reports. Reports are repository code's output (and on the patched side
 * partly the model's), so: a document type or entity declaration is refused outright (no entity expansion of any
 * kind, only the five predefined entities and character references are decoded), nesting deeper than MAX_XML_DEPTH
 * is refused, and the reader is one linear pass over text the caller already capped. A full XML parser is not needed
 * for testsuite/testcase/failure and would bring expansion and recursion we would have to switch off.
 */
export type XmlEvent =
  | { kind: 'open'; name: string; attrs: Record<string, string>; selfClosing: boolean }
  | { kind: 'close'; name: string }
  | { kind: 'text'; text: string };

export class XmlRefused extends Error {}

const TOKEN =
  /<!\[CDATA\[([\s\S]*?)\]\]>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<(\/?)([A-Za-z_][\w:.-]*)((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
const ATTR = /([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const ENTITY = /&(?:(amp|lt|gt|quot|apos)|#(\d{1,7})|#x([0-9a-fA-F]{1,6}));/g;
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function decodeEntities(text: string): string {
  return text.replace(ENTITY, (whole, name: string | undefined, dec: string | undefined, hex: string | undefined) => {
    if (name) return NAMED[name] ?? whole;
    const code = dec !== undefined ? Number(dec) : parseInt(hex ?? '', 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '';
  });
}

function attributesOf(source: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  for (const m of source.matchAll(ATTR)) attrs[m[1]] = decodeEntities(m[2] ?? m[3] ?? '');
  return attrs;
}

/** Yields the document's events in order; throws XmlRefused on a declaration, too deep a nesting or mismatched tags. */
export function* xmlEvents(doc: string): Generator<XmlEvent> {
  if (/<!DOCTYPE|<!ENTITY/i.test(doc)) throw new XmlRefused('document type or entity declarations are not accepted');
  const stack: string[] = [];
  let last = 0;
  for (const m of doc.matchAll(TOKEN)) {
    const index = m.index ?? 0;
    if (index > last && stack.length > 0) yield { kind: 'text', text: decodeEntities(doc.slice(last, index)) };
    last = index + m[0].length;
    if (m[1] !== undefined) {
      yield { kind: 'text', text: m[1] };
      continue;
    }
    const name = m[3];
    if (name === undefined) continue; // comment or processing instruction
    if (m[2] === '/') {
      if (stack.pop() !== name) throw new XmlRefused(`mismatched closing tag </${name}>`);
      yield { kind: 'close', name };
      continue;
    }
    const selfClosing = m[5] === '/';
    if (!selfClosing) {
      stack.push(name);
      if (stack.length > MAX_XML_DEPTH) throw new XmlRefused(`nesting deeper than ${MAX_XML_DEPTH}`);
    }
    yield { kind: 'open', name, attrs: attributesOf(m[4] ?? ''), selfClosing };
  }
}
