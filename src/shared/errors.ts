// Typed errors of the whole platform. Each carries the HTTP status and the stable snake_case code
// of the contract's error body; one middleware (http/errorHandler.ts) turns them into responses.

export interface ErrorDetail {
  path?: string;
  message: string;
  [key: string]: unknown;
}

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetail[];
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    options: { details?: ErrorDetail[]; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.details = options.details ?? [];
    this.headers = options.headers ?? {};
  }
}

export class ValidationError extends AppError {
  constructor(message: string, details: ErrorDetail[] = [], code = 'validation_error') {
    super(400, code, message, { details });
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'Authentication required', headers: Record<string, string> = {}) {
    super(401, 'unauthorized', message, { headers });
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'Not allowed', code = 'forbidden') {
    super(403, code, message);
  }
}

export class NotFoundError extends AppError {
  constructor(message: string, code = 'not_found') {
    super(404, code, message);
  }
}

export class ConflictError extends AppError {
  constructor(message: string, code = 'conflict', details: ErrorDetail[] = []) {
    super(409, code, message, { details });
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(message: string) {
    super(413, 'payload_too_large', message);
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(message: string) {
    super(415, 'unsupported_media_type', message);
  }
}

export class UnprocessableError extends AppError {
  constructor(message: string, code = 'unprocessable', details: ErrorDetail[] = []) {
    super(422, code, message, { details });
  }
}

/** The Retry-After value of a refusal: whole seconds, at least 1. */
export function retryAfterValue(seconds: number): string {
  return String(Math.max(1, Math.ceil(seconds)));
}

export class RateLimitedError extends AppError {
  constructor(retryAfterSeconds: number, message = 'Too many requests') {
    super(429, 'rate_limited', message, {
      headers: { 'Retry-After': retryAfterValue(retryAfterSeconds) },
    });
  }
}

export class DependencyUnavailableError extends AppError {
  constructor(message: string, cause?: unknown) {
    super(503, 'dependency_unavailable', message, { cause });
  }
}

/** Too much of some expensive work at once: come back shortly (503 with Retry-After). */
export class OverloadedError extends AppError {
  constructor(retryAfterSeconds: number, message: string) {
    super(503, 'overloaded', message, {
      headers: { 'Retry-After': retryAfterValue(retryAfterSeconds) },
    });
  }
}
