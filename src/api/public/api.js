// The API over fetch, as a browser client must call it: same-origin cookies, JSON bodies, the
// CSRF token for the upload, and errors turned into messages a person can read.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function csrfToken() {
  return document.cookie.match(/(?:^|; )csrf-token=([^;]*)/)?.[1] ?? '';
}

async function request(method, path, { json, body, headers = {} } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: json === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: json === undefined ? body : JSON.stringify(json),
    });
  } catch {
    throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection.');
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = data?.error;
    const message = error?.message ?? `The server answered ${response.status}.`;
    throw new ApiError(response.status, error?.code ?? 'http_error', message);
  }
  return data;
}

export const api = {
  isSignedIn: () =>
    request('GET', '/api/authorize/isloggedin').then(
      () => true,
      (error) => {
        if (error.status === 401) return false;
        throw error;
      },
    ),
  me: () => request('GET', '/api/account/me'),
  signIn: (email, password) =>
    request('POST', '/api/authorize/login', { json: { email, password } }),
  signUp: (email, username, password) =>
    request('POST', '/api/authorize/signup', { json: { email, username, password } }),
  signOut: () => request('POST', '/api/authorize/logout', { json: {} }),
  currencies: () => request('GET', '/api/currency/all'),
  history: (code, hours, intervalSeconds) =>
    request(
      'GET',
      `/api/currency/history/${encodeURIComponent(code)}?hours=${hours}&intervalSeconds=${intervalSeconds}`,
    ),
  candles: (code, hours, intervalSeconds, tz) =>
    request(
      'GET',
      `/api/currency/candles/${encodeURIComponent(code)}?hours=${hours}&intervalSeconds=${intervalSeconds}&tz=${encodeURIComponent(tz)}`,
    ),
  portfolio: () => request('GET', '/api/portfolio/get'),
  addHolding: (currencyCode, shares, walletDollars) =>
    request('POST', '/api/portfolio/add', { json: { currencyCode, shares, walletDollars } }),
  uploadPicture: (file) => {
    const body = new FormData();
    body.append('file', file);
    return request('POST', '/api/account/image/upload', {
      body,
      headers: { 'X-CSRF-Token': csrfToken() },
    });
  },
};
