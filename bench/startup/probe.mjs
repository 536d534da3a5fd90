// Loaded by bench:startup into each measured `platform` process (`node --import <this file>`), for
// the baseline commit and this tree alike: records when the process first sends COPY data to
// PostgreSQL (the first rows leave; a CopyData message starts with the byte 'd', which no other
// message a client sends does) and its CPU time then and at exit, as one JSON line in the file
// named by STARTUP_PROBE_OUT. Plain JavaScript on purpose: a TypeScript probe makes Node load its
// type stripper into every measured process (~0.08 s), which the command itself never pays.
import { writeFileSync } from 'node:fs';
import net from 'node:net';

const COPY_DATA = 0x64;
const now = () => performance.timeOrigin + performance.now();
const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
const figures = { firstRowAt: null, firstRowCpu: null, exitAt: null, exitCpu: null };

// eslint-disable-next-line @typescript-eslint/unbound-method -- called below with its socket as this
const write = net.Socket.prototype.write;
/** @param {unknown} chunk @param {unknown[]} rest */
net.Socket.prototype.write = function (chunk, ...rest) {
  if (figures.firstRowAt === null && Buffer.isBuffer(chunk) && chunk[0] === COPY_DATA) {
    figures.firstRowAt = now();
    figures.firstRowCpu = cpuSeconds();
  }
  return write.apply(this, /** @type {never} */ ([chunk, ...rest]));
};

process.on('exit', () => {
  figures.exitAt = now();
  figures.exitCpu = cpuSeconds();
  if (process.env.STARTUP_PROBE_OUT) {
    writeFileSync(process.env.STARTUP_PROBE_OUT, `${JSON.stringify(figures)}\n`);
  }
});
