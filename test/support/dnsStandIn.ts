import dgram from 'node:dgram';
import { isIPv4, isIPv6 } from 'node:net';

/**
 * A DNS stand-in on loopback for the egress proxy's tests: answers A and AAAA queries from a table (a function, so a
 * test can change its answer between queries: DNS rebinding), NXDOMAIN for names it does not know. Counts queries.
 */
export interface DnsStandIn {
  server: string;
  queries: Map<string, number>;
  close(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  while (i < msg.length && msg[i]! > 0 && labels.length < 128) {
    labels.push(msg.subarray(i + 1, i + 1 + msg[i]!).toString('latin1'));
    i += 1 + msg[i]!;
  }
  return { name: labels.join('.').toLowerCase(), end: i + 1 };
}

function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  const [head, tail = ''] = ip.split('::');
  const parts = (s: string) => (s ? s.split(':') : []);
  const h = parts(head!);
  const t = parts(tail);
  const groups = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 255]));
}

function answer(msg: Buffer, table: (name: string) => string[] | undefined, queries: Map<string, number>): Buffer {
  const { name, end } = readName(msg, 12);
  const qtype = msg.readUInt16BE(end);
  queries.set(`${name}/${qtype}`, (queries.get(`${name}/${qtype}`) ?? 0) + 1);
  const known = table(name);
  const want = (ip: string) => (qtype === 1 ? isIPv4(ip) : qtype === 28 ? isIPv6(ip) : false);
  const ips = (known ?? []).filter(want);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(msg.readUInt16BE(0), 0);
  header.writeUInt16BE(0x8180 | (known ? 0 : 3), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(ips.length, 6);
  const records = ips.map((ip) => {
    const data = ipBytes(ip);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0);
    rr.writeUInt16BE(qtype, 2);
    rr.writeUInt16BE(1, 4);
    rr.writeUInt32BE(0, 6);
    rr.writeUInt16BE(data.length, 10);
    return Buffer.concat([rr, data]);
  });
  return Buffer.concat([header, msg.subarray(12, end + 4), ...records]);
}

export async function startDnsStandIn(table: (name: string) => string[] | undefined): Promise<DnsStandIn> {
  const sock = dgram.createSocket('udp4');
  const queries = new Map<string, number>();
  sock.on('message', (msg, rinfo) => {
    if (msg.length < 17) return;
    sock.send(answer(msg, table, queries), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${sock.address().port}`,
    queries,
    close: () => new Promise((resolve) => sock.close(() => resolve())),
  };
}
