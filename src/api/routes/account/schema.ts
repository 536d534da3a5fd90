import { z } from 'zod';

// A positive integer that fits a double exactly; anything else is a 400 naming `id`.
export const userIdParams = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/, 'must be a positive integer')
    .transform(Number)
    .meta({ description: 'User id', example: '42' }),
});

export const uploadBody = z
  .object({
    file: z
      .custom<Buffer>((value) => Buffer.isBuffer(value), "a part named 'file' holding the picture")
      .meta({
        type: 'string',
        format: 'binary',
        description: 'PNG, JPEG, GIF or WebP, judged by content; re-encoded before storage.',
      }),
  })
  .meta({ id: 'ProfilePictureUpload' });

export const successSchema = z
  .object({ successful: z.literal(true) })
  .meta({ id: 'OperationSuccessfulResponse' });

export const hasPictureSchema = z
  .object({ hasProfilePicture: z.boolean() })
  .meta({ id: 'HasProfilePictureResponse' });

export const accountSchema = z
  .object({
    id: z.number().int().meta({ description: 'User id (as in the profile-picture routes)' }),
    username: z.string(),
    email: z.string(),
    hasProfilePicture: z.boolean(),
  })
  .meta({ id: 'Account' });
