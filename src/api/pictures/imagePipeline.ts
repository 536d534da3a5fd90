import { createHash } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import sharp, { type Metadata, type Sharp } from 'sharp';
import { ConcurrencyGate } from '../../shared/concurrencyGate.ts';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from '../../shared/errors.ts';
import { gauge, histogram } from '../../shared/metrics.ts';

// Profile pictures are judged by their bytes, never by name or declared type, and stored only
// as our own re-encoding: decoding and encoding again drops anything smuggled beside the pixels,
// and sharp writes no metadata (EXIF, GPS, ICC comments) unless asked to.

const FORMATS = {
  'image/png': (image: Sharp) => image.png({ compressionLevel: 9 }),
  'image/jpeg': (image: Sharp) => image.jpeg({ quality: 85 }),
  'image/gif': (image: Sharp) => image.gif(),
  'image/webp': (image: Sharp) => image.webp({ quality: 85 }),
} as const;

export type PictureType = keyof typeof FORMATS;
export const PICTURE_TYPES = Object.keys(FORMATS) as PictureType[];

/** Longest side of a stored picture; larger uploads are scaled down, smaller ones kept. */
export const MAX_STORED_SIDE = 1024;

export interface StoredPicture {
  image: Buffer;
  contentType: PictureType;
  width: number;
  height: number;
  etag: string;
}

function isPictureType(mime: string): mime is PictureType {
  return mime in FORMATS;
}

const notAnImage = (why: string) =>
  new UnsupportedMediaTypeError(`The file is not a usable PNG, JPEG, GIF or WebP image: ${why}`);

const tooManyPixels = (maxPixels: number) =>
  new PayloadTooLargeError(`The picture has more than the limit of ${maxPixels} pixels`);

// Decoding holds the whole bitmap (a 25 MP picture is ~100 MB with libvips' buffers), so the
// number of decodes at once bounds the API's memory: the route runs them through a gate of
// UPLOAD_DECODE_CONCURRENCY with a queue of UPLOAD_DECODE_QUEUE, past which uploads get 503.
const decodesRunning = gauge(
  'api_picture_decodes_in_progress',
  'Profile pictures being decoded right now.',
  [],
);
const decodesWaiting = gauge(
  'api_picture_decodes_waiting',
  'Profile picture uploads waiting for a decoding slot.',
  [],
);
const decodeConcurrency = histogram(
  'api_picture_decode_concurrency',
  'Decodes running (this one included) when a profile picture decode starts.',
  [],
  [1, 2, 3, 4, 6, 8, 12, 16, 32],
);

let decoding = 0;

async function countedDecode<T>(work: () => Promise<T>): Promise<T> {
  decoding++;
  decodesRunning.set(decoding);
  decodeConcurrency.observe(decoding);
  try {
    return await work();
  } finally {
    decoding--;
    decodesRunning.set(decoding);
  }
}

/** The gate every profile picture decode goes through. */
export function pictureDecodingGate(limits: { concurrency: number; maxWaiting: number }) {
  return new ConcurrencyGate({
    limit: limits.concurrency,
    maxWaiting: limits.maxWaiting,
    retryAfterSeconds: 2,
    busyMessage: 'Too many profile pictures are being processed; try again shortly',
    onChange: (_running, waiting) => decodesWaiting.set(waiting),
  });
}

export function normalisePicture(
  upload: Buffer,
  limits: { maxPixels: number },
): Promise<StoredPicture> {
  return countedDecode(() => decodePicture(upload, limits));
}

async function decodePicture(
  upload: Buffer,
  limits: { maxPixels: number },
): Promise<StoredPicture> {
  const detected = await fileTypeFromBuffer(upload);
  if (!detected || !isPictureType(detected.mime)) {
    throw notAnImage(detected ? `its content is ${detected.mime}` : 'its content is not an image');
  }
  const options = {
    limitInputPixels: limits.maxPixels,
    failOn: 'warning',
    animated: false,
  } as const;
  // The header gives the dimensions without decoding: a pixel bomb is refused before any work.
  let header: Metadata;
  try {
    header = await sharp(upload, options).metadata();
  } catch (error) {
    throw refusal(error, limits.maxPixels);
  }
  const pageHeight = header.pageHeight ?? header.height;
  if (header.width * pageHeight > limits.maxPixels) throw tooManyPixels(limits.maxPixels);
  try {
    const pipeline = sharp(upload, options)
      .autoOrient()
      .resize(MAX_STORED_SIDE, MAX_STORED_SIDE, { fit: 'inside', withoutEnlargement: true });
    const { data, info } = await FORMATS[detected.mime](pipeline).toBuffer({
      resolveWithObject: true,
    });
    return {
      image: data,
      contentType: detected.mime,
      width: info.width,
      height: info.height,
      etag: `"${createHash('sha256').update(data).digest('base64url')}"`,
    };
  } catch (error) {
    throw refusal(error, limits.maxPixels);
  }
}

/** sharp's refusal as ours: over the pixel limit is 413, anything undecodable 415. */
function refusal(error: unknown, maxPixels: number) {
  const why = describe(error);
  return /pixel limit/i.test(why) ? tooManyPixels(maxPixels) : notAnImage(why);
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // libvips messages can run over several lines; the first says what went wrong.
  return message.split('\n')[0]?.trim() || 'it could not be decoded';
}
