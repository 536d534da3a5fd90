import { getJson } from './http.ts';

// Payloads exactly as the deployed clients send them (contract section A): the news harvester's
// sentiment event and the analysis service's prediction and training-session summary.

export function newsEvent(overrides: Record<string, unknown> = {}) {
  return {
    articleId: 101,
    title: 'Bitcoin climbs as ETF inflows return',
    publishDate: '2026-03-01 12:00:00',
    source: 'CoinDesk',
    url: 'https://www.coindesk.com/markets/2026/03/01/bitcoin-climbs',
    positiveScore: 0.61,
    neutralScore: 0.3,
    negativeScore: 0.09,
    compositeScore: 0.75,
    cryptoRelevance: 0.8,
    lastUpdated: '2026-03-01 12:05:00',
    ...overrides,
  };
}

export function predictionRequest(overrides: Record<string, unknown> = {}) {
  return {
    currencyCode: 'BTC',
    predictedPrice: 65250.5,
    actualPrice: 64980.25,
    priceDifference: 270.25,
    percentDifference: 0.4159,
    modelType: 'lstm',
    numRows: 5000,
    lastUpdated: '2026-03-01 12:00:00',
    ...overrides,
  };
}

export function trainingSessionRequest(
  prediction: number,
  overrides: Record<string, unknown> = {},
) {
  return {
    currency: 'BTC',
    prediction,
    numRows: 5000,
    epochsTrained: 37,
    maxEpochs: 100,
    startingLoss: 0.2431,
    finalLoss: 0.0122,
    modelType: 'lstm',
    queryType: 'historical_price',
    trainingStartTime: '2026-03-01 11:00:00',
    trainingEndTime: '2026-03-01 11:42:10',
    queryStartTime: '2026-02-01 00:00:00',
    queryEndTime: '2026-03-01 00:00:00',
    sequenceLength: 60,
    batchSize: 32,
    dimensionWidth: 128,
    queryLoad: ['batches'],
    queryBatchSize: null,
    trainingDevice: 'gpu_0',
    shortSequenceLength: null,
    mediumSequenceLength: null,
    longSequenceLength: null,
    ...overrides,
  };
}

/** POSTs a body (an object is sent as JSON, a string as it is) with the given content type. */
export function post(
  url: string,
  token: string,
  body: unknown,
  contentType = 'application/json',
  headers: Record<string, string> = {},
) {
  return getJson(url, token, {
    method: 'POST',
    headers: { 'content-type': contentType, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export const ndjson = (items: unknown[]) => items.map((item) => JSON.stringify(item)).join('\n');
