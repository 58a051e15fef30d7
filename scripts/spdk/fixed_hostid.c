/*
 * fixed_hostid: an LD_PRELOAD shim that makes libuuid's uuid_generate() return one fixed UUID.
 *
 * SPDK's spdk_nvme_identify (at the commit docs/nvme-tcp.md names) connects with the default
 * host NQN, nqn.2014-08.org.nvmexpress:uuid:<a UUID drawn at start>, and does not apply the
 * hostnqn it parses from -r; a target that grants namespaces by host NQN cannot name such a
 * host in advance. Preloaded into it, the host NQN becomes
 * nqn.2014-08.org.nvmexpress:uuid:<FIXED_HOSTID, or 5eed0000-0000-4000-8000-000000000001>,
 * which the device's [nvme.hosts] grants. Nothing of SPDK is changed. Not built by CI.
 */
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

void
uuid_generate(uuid_t out)
{
	const char *s = getenv("FIXED_HOSTID");

	if (s == NULL || uuid_parse(s, out) != 0) {
		uuid_parse("5eed0000-0000-4000-8000-000000000001", out);
	}
}
