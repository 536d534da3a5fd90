// The HTTP client of bench:history, in its own process as an analyst's tool would be, so its
// allocations (parsing thousands of points) never pause the server being measured. Receives a
// list of URLs over IPC, requests them one after the other, and answers with the timings.

interface Job {
  urls: string[];
  token: string;
  warmUp: number;
}

process.on('message', (job: Job | 'exit') => {
  if (job === 'exit') process.exit(0);
  run(job).then(
    (result) => process.send!({ ok: true, ...result }),
    (error: unknown) => process.send!({ ok: false, error: String(error) }),
  );
});

/** Time to the last byte of each body and, beside it, including JSON.parse of the body. */
async function run({ urls, token, warmUp }: Job) {
  const toLastByte: number[] = [];
  const withParse: number[] = [];
  let points = 0;
  for (const [i, url] of urls.entries()) {
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const body = await response.text();
    const lastByte = performance.now() - started;
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${body}`);
    points = (JSON.parse(body) as unknown[]).length;
    if (i < warmUp) continue;
    toLastByte.push(lastByte);
    withParse.push(performance.now() - started);
  }
  return { toLastByte, withParse, points };
}
