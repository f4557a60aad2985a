// Images must be pinned to a tag or a digest: not `latest`, not untagged.
import { allow, denyInvalid, invalidField, podSpecOf, validatingWebhook } from 'annex';

const floating = (image: string) =>
  image.endsWith(':latest') || !/(:[\w.-]+|@sha256:\w+)$/.test(image);

export default validatingWebhook({
  name: 'pinned-images.example.com',
  match: { kinds: ['Pod', 'Deployment'] },
  admit(req) {
    const causes = (podSpecOf(req)?.containers ?? [])
      .filter((c) => floating(c.image))
      .map((c) => invalidField(`${c.path}.image`, c.image, 'must be pinned to a tag or digest'));
    return causes.length ? denyInvalid(req, causes) : allow();
  },
});
