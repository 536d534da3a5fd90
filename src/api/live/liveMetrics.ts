import { counter, gauge } from '../../shared/metrics.ts';

// The /trader namespace's metrics, declared once for the modules of the gateway that set them.

export const connections = gauge('api_live_connections', 'Open Socket.IO connections on /trader.', [
  'kind',
]);
export const messages = counter('api_live_messages_total', 'Client messages on /trader.', [
  'event',
  'outcome',
]);
export const emitted = counter(
  'api_live_events_emitted_total',
  'Events sent to rooms on /trader.',
  ['event'],
);
