import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { PICTURE_TYPES, type StoredPicture } from './imagePipeline.ts';

const pictureRow = z.object({
  image: z.instanceof(Buffer),
  contentType: z.enum(
    PICTURE_TYPES as [StoredPicture['contentType'], ...StoredPicture['contentType'][]],
  ),
  etag: z.string(),
  updatedAt: z.date(),
});

/** Stores the user's picture, replacing any earlier one. */
export async function savePicture(pool: DatabasePool, userId: number, picture: StoredPicture) {
  await pool.query(sql.unsafe`
    INSERT INTO app.profile_pictures (user_id, content_type, image, etag, width, height)
    VALUES (${userId}, ${picture.contentType}, ${sql.binary(picture.image)}, ${picture.etag},
            ${picture.width}, ${picture.height})
    ON CONFLICT (user_id) DO UPDATE
      SET content_type = EXCLUDED.content_type, image = EXCLUDED.image, etag = EXCLUDED.etag,
          width = EXCLUDED.width, height = EXCLUDED.height, updated_at = now()
  `);
}

export async function loadPicture(pool: DatabasePool, userId: number) {
  return pool.maybeOne(sql.type(pictureRow)`
    SELECT image, content_type AS "contentType", etag, updated_at AS "updatedAt"
    FROM app.profile_pictures WHERE user_id = ${userId}
  `);
}

/** null when the user does not exist, else whether it has a picture. */
export async function pictureState(pool: DatabasePool, userId: number): Promise<boolean | null> {
  const row = await pool.maybeOne(sql.type(z.object({ hasPicture: z.boolean() }))`
    SELECT EXISTS (SELECT FROM app.profile_pictures p WHERE p.user_id = u.id) AS "hasPicture"
    FROM app.users u WHERE u.id = ${userId}
  `);
  return row ? row.hasPicture : null;
}
