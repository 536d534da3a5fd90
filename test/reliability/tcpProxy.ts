import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Every byte in either direction is swallowed; connections stay open (a half-open link). */
  blackHole(): void;
  /** Forwards again; connections that lived through the black hole are reset, as TCP would. */
  heal(): void;
  close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 to `target`, switchable to a black hole. */
export async function startTcpProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
): Promise<TcpProxy> {
  let blackHoled = false;
  const sockets = new Set<net.Socket>();
  const swallowed = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => {
      sockets.delete(socket);
      swallowed.delete(socket);
    });
  };
  const server = net.createServer((downstream) => {
    track(downstream);
    if (blackHoled) {
      swallowed.add(downstream);
      downstream.on('data', () => {});
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    track(upstream);
    const forward = (from: net.Socket, to: net.Socket) => {
      from.on('data', (chunk) => {
        if (blackHoled) {
          swallowed.add(from).add(to);
          return;
        }
        to.write(chunk);
      });
      from.on('close', () => to.destroy());
    };
    forward(downstream, upstream);
    forward(upstream, downstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    blackHole() {
      blackHoled = true;
    },
    heal() {
      blackHoled = false;
      for (const socket of swallowed) socket.destroy();
      swallowed.clear();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
