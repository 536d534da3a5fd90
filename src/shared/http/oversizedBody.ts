import type { Context } from 'koa';

/**
 * A body refused as too large is not read to its end: reading stops, the answer says
 * `Connection: close`, and the socket is closed once the answer is written, dropping whatever
 * the client is still sending. Without this a chunked upload of any size was read to its end
 * before the 413 went out (or the connection was kept, the unread rest still pending on it).
 */
export function refuseRestOfBody(ctx: Context) {
  ctx.set('Connection', 'close');
  ctx.req.unpipe();
  ctx.req.pause();
  const socket = ctx.req.socket;
  ctx.res.once('finish', () => socket.destroySoon());
}
