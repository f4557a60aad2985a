// Containers that do not say otherwise run with allowPrivilegeEscalation: false. The
// handler changes its copy of the object and returns it; annex computes the JSON Patch.
import { allow, mutate, mutatingWebhook, podSpecOf } from 'annex';

type Container = { name: string; securityContext?: { allowPrivilegeEscalation?: boolean } };

export default mutatingWebhook({
  name: 'no-privilege-escalation.example.com',
  match: { kinds: ['Pod', 'Deployment'], operations: ['CREATE'] },
  admit(req) {
    const pod = podSpecOf(req);
    const containers = (pod?.spec.containers ?? []) as Container[];
    const open = containers.filter(
      (c) => c.securityContext?.allowPrivilegeEscalation === undefined,
    );
    if (!req.object || open.length === 0) return allow();
    for (const c of open)
      c.securityContext = { ...c.securityContext, allowPrivilegeEscalation: false };
    return mutate(
      req.object,
      open.map((c) => `annex: container "${c.name}" may not escalate privileges`),
    );
  },
});
