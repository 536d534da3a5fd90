import type { Context, Next } from 'koa';

// Every request gets an abort signal that fires when its client goes away before the answer is
// complete (the response closes unfinished) or when the request deadline passes (requestDeadline
// calls abandonRequest). Routes that opt in (`cancelWhenAbandoned`) stop their SQL with it.

const CONTROLLER = Symbol('requestAbort');

type WithController = Context & { [CONTROLLER]?: AbortController };

export function requestAbort() {
  return async function trackAbandonment(ctx: Context, next: Next) {
    const controller = new AbortController();
    (ctx as WithController)[CONTROLLER] = controller;
    const onClose = () => {
      if (!ctx.res.writableFinished) controller.abort(new Error('client disconnected'));
    };
    ctx.res.once('close', onClose);
    await next();
  };
}

/** The request's abort signal (a never-aborting one outside the middleware, e.g. in unit tests). */
export function requestSignal(ctx: Context): AbortSignal {
  return (ctx as WithController)[CONTROLLER]?.signal ?? new AbortController().signal;
}

/** Gives up on the request's work (its deadline passed). */
export function abandonRequest(ctx: Context, reason: Error) {
  (ctx as WithController)[CONTROLLER]?.abort(reason);
}
