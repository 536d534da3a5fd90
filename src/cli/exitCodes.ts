// Exit codes shared by every command: 0 success, 1 failure or unhealthy, 2 usage or configuration.
// Each command's --help says what they mean for it (`withExitCodes` in help.ts writes that part
// from these values, so the text cannot name a code the program does not use).
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** What each exit code means for one command. */
export interface ExitMeanings {
  ok: string;
  failure: string;
  /** Default: usage or configuration error. */
  usage?: string;
}

export const USAGE_MEANING = 'usage error (the problem and a hint on stderr) or bad configuration';
