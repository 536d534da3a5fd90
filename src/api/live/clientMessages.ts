import type { z } from 'zod';
import type { Logger } from '../../shared/logger.ts';
import { messages } from './liveMetrics.ts';
import type { TraderSocket } from './liveServer.ts';
import { errorAck, invalidMessageAck } from './messages.ts';

// Every client message is validated, run and acknowledged here, and counted by outcome; nothing
// a client sends can throw out of a handler or go unanswered when it asked for an answer.

/** Validates, runs and acknowledges one kind of client message; nothing escapes. */
export function onClientMessage<S extends z.ZodType, R>(
  socket: TraderSocket,
  event: string,
  schema: S,
  run: (payload: z.output<S>) => Promise<R>,
  logger: Logger,
): void {
  socket.on(event, (...args: unknown[]) => {
    const ack = typeof args.at(-1) === 'function' ? (args.pop() as (r: unknown) => void) : noAck;
    const parsed = schema.safeParse(args[0]);
    if (!parsed.success) {
      messages.inc({ event, outcome: 'invalid' });
      ack(invalidMessageAck(event, parsed.error));
      return;
    }
    run(parsed.data).then(
      (result) => {
        messages.inc({ event, outcome: 'ok' });
        ack(result);
      },
      (error: unknown) => {
        messages.inc({ event, outcome: 'error' });
        logger.error({ err: error, event }, 'live message handler failed');
        ack(errorAck('internal_error', 'The message could not be handled'));
      },
    );
  });
}

/** Any other event is counted as refused and, when it asks for an answer, told what exists. */
export function refuseUnknownEvents(socket: TraderSocket, known: readonly string[]): void {
  socket.onAny((event: string, ...args: unknown[]) => {
    if (known.includes(event)) return;
    messages.inc({ event: 'unknown', outcome: 'refused' });
    const ack = args.at(-1);
    if (typeof ack === 'function') {
      (ack as (response: unknown) => void)(
        errorAck('unknown_event', `Unknown event '${event}'; send ${known.join(' or ')}`),
      );
    }
  });
}

function noAck() {}
