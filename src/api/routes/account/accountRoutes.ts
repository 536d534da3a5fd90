import type { DatabasePool } from 'slonik';
import { NotFoundError } from '../../../shared/errors.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { counter } from '../../../shared/metrics.ts';
import type { ConcurrencyGate } from '../../../shared/concurrencyGate.ts';
import { normalisePicture } from '../../pictures/imagePipeline.ts';
import { multipartFile } from '../../pictures/multipart.ts';
import { loadPicture, pictureState, savePicture } from '../../pictures/pictureStore.ts';
import { requireCsrfToken } from '../../session/csrf.ts';
import { requireUser, signedInUser } from '../../session/requireUser.ts';
import { sessionSecurity, uploadSecurity } from '../security.ts';
import { profileOf } from '../../identity/users.ts';
import {
  accountSchema,
  hasPictureSchema,
  successSchema,
  uploadBody,
  userIdParams,
} from './schema.ts';

export interface AccountRouteDeps {
  pool: DatabasePool;
  maxBytes: number;
  maxPixels: number;
  /** Bounds how many pictures are decoded at once (see pictureDecodingGate). */
  decoding: ConcurrencyGate;
}

const uploads = counter(
  'api_profile_picture_uploads_total',
  'Profile picture uploads by outcome.',
  ['outcome'],
);

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

/**
 * RFC 9110 §13.1.2 (weak comparison). Koa's ctx.fresh is not used: it ignores validators when the
 * request says `Cache-Control: no-cache`, which fetch() adds to every conditional request.
 */
function matchesIfNoneMatch(header: string, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => opaque(tag) === opaque(etag));
}

export function registerAccountRoutes(registry: RouteRegistry, deps: AccountRouteDeps) {
  registry.add(
    defineRoute({
      method: 'post',
      path: '/api/account/image/upload',
      operationId: 'uploadProfilePicture',
      summary: 'Upload (or replace) the profile picture',
      description:
        `Multipart part \`file\`, at most ${deps.maxBytes} bytes and ${deps.maxPixels} pixels. ` +
        'The type is judged by content (PNG, JPEG, GIF, WebP), never by name; the picture is ' +
        're-encoded without metadata. Browsers must send the `csrf-token` cookie value in `X-CSRF-Token`. ' +
        'Only a few pictures are decoded at once; while too many wait, the upload gets 503 with Retry-After.',
      tags: ['account'],
      security: uploadSecurity,
      before: [requireUser, requireCsrfToken, multipartFile('file', deps.maxBytes)],
      body: uploadBody,
      bodyTypes: ['multipart/form-data'],
      responses: { 200: { description: 'Stored', schema: successSchema } },
      errors: [401, 403, 413, 415, 503],
      handler: async (ctx, { body }) => {
        const userId = signedInUser(ctx);
        try {
          const picture = await deps.decoding.run(() =>
            normalisePicture(body.file, { maxPixels: deps.maxPixels }),
          );
          await savePicture(deps.pool, userId, picture);
          uploads.inc({ outcome: 'stored' });
        } catch (error) {
          uploads.inc({ outcome: 'refused' });
          throw error;
        }
        ctx.body = { successful: true };
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/account/get/{id}/profile-picture',
      operationId: 'profilePicture',
      summary: "A user's profile picture",
      description:
        'Served with its content type, a strong ETag and `Cache-Control: private, no-cache`; ' +
        'a matching `If-None-Match` gets 304.',
      tags: ['account'],
      security: sessionSecurity,
      before: [requireUser],
      params: userIdParams,
      responses: {
        200: { description: 'The picture', contentType: 'image/*', schema: uploadBody.shape.file },
        304: { description: 'Not modified since the ETag the client holds' },
      },
      errors: [401, 404],
      handler: async (ctx, { params }) => {
        const picture = await loadPicture(deps.pool, params.id);
        if (!picture) {
          throw new NotFoundError(`User ${params.id} has no profile picture`, 'no_profile_picture');
        }
        ctx.status = 200;
        ctx.set('ETag', picture.etag);
        ctx.set('Last-Modified', picture.updatedAt.toUTCString());
        ctx.set('Cache-Control', 'private, no-cache');
        // A web client on a sibling host (API_ALLOWED_ORIGINS) may show it in an <img>.
        ctx.set('Cross-Origin-Resource-Policy', 'same-site');
        if (matchesIfNoneMatch(ctx.get('if-none-match'), picture.etag)) {
          ctx.status = 304;
          return;
        }
        ctx.type = picture.contentType;
        ctx.set(
          'Content-Disposition',
          `inline; filename="profile-picture-${params.id}.${EXTENSIONS[picture.contentType]}"`,
        );
        ctx.body = picture.image;
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/account/get/{id}/has-profile-picture',
      operationId: 'hasProfilePicture',
      summary: 'Whether a user has a profile picture',
      tags: ['account'],
      security: sessionSecurity,
      before: [requireUser],
      params: userIdParams,
      responses: { 200: { description: 'Answer', schema: hasPictureSchema } },
      errors: [401, 404],
      handler: async (ctx, { params }) => {
        const state = await pictureState(deps.pool, params.id);
        if (state === null) throw new NotFoundError(`No user ${params.id}`, 'unknown_user');
        ctx.body = { hasProfilePicture: state };
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/account/me',
      operationId: 'ownAccount',
      summary: 'The signed-in user’s account: id, username, email, whether it has a picture',
      tags: ['account'],
      security: sessionSecurity,
      before: [requireUser],
      responses: { 200: { description: 'The account', schema: accountSchema } },
      errors: [401],
      handler: async (ctx) => {
        const profile = await profileOf(deps.pool, signedInUser(ctx));
        if (!profile) throw new NotFoundError('The account no longer exists', 'unknown_user');
        ctx.body = profile;
      },
    }),
  );
}
