// Exit codes shared by every command: 0 success, 1 failure or unhealthy, 2 usage or configuration.
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;
