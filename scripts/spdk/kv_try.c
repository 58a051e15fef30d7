/*
 * kv_try: store, retrieve, list and delete keys on a Key Value namespace through SPDK's NVMe
 * driver and its KV API (spdk/nvme_kv.h), over NVMe/TCP, without hugepages.
 *
 * Written for Cerberus (scripts/try-spdk, docs/nvme-tcp.md, "Tried with SPDK"): the transport,
 * the controller's initialisation and the KV commands are SPDK's, unmodified; this program
 * only calls its public API and checks what comes back. Not built or run by CI.
 *
 *   kv_try -r 'trtype:TCP adrfam:IPv4 traddr:127.0.0.1 trsvcid:4420 subnqn:NQN' -H HOSTNQN
 *          [-n NSID] [-s MEM_MB] [-K KEYFILE] [-D]
 *
 * -K: a file (mode 0600) holding the host's DH-HMAC-CHAP secret, "DHHC-1:..:...:"; SPDK then
 * authenticates each queue with it (through its keyring's file module). -D: header and data
 * digests (CRC32C) asked for in the ICReq of each queue.
 *
 * Prints one line per check ("ok ..." or "FAIL ...") and exits 0 only if every check passed.
 */
#include "spdk/stdinc.h"
#include "spdk/env.h"
#include "spdk/nvme.h"
#include "spdk/nvme_kv.h"
#include "spdk/keyring.h"
#include "spdk/module/keyring/file.h"

#define LIST_BUF 8192
#define USAGE "usage: %s -r TRID -H HOSTNQN [-n NSID] [-s MEM_MB] [-K KEYFILE] [-D]\n"

static int g_failures;
static int g_checks;

struct waiter {
	bool done;
	struct spdk_nvme_cpl cpl;
};

static void
on_done(void *arg, const struct spdk_nvme_cpl *cpl)
{
	struct waiter *w = arg;

	w->cpl = *cpl;
	w->done = true;
}

static void
wait_for(struct spdk_nvme_qpair *qpair, struct waiter *w)
{
	while (!w->done) {
		if (spdk_nvme_qpair_process_completions(qpair, 0) < 0) {
			fprintf(stderr, "kv_try: the I/O queue failed\n");
			exit(2);
		}
	}
}

static void
check(bool ok, const char *what, const struct waiter *w)
{
	g_checks++;
	if (!ok) {
		g_failures++;
	}
	printf("%s %s (sct %u sc 0x%02x dw0 %u)\n", ok ? "ok  " : "FAIL", what,
	       w->cpl.status.sct, w->cpl.status.sc, w->cpl.cdw0);
	fflush(stdout);
}

static bool
is_status(const struct waiter *w, unsigned sct, unsigned sc)
{
	return w->cpl.status.sct == sct && w->cpl.status.sc == sc;
}

/* A value every byte of which depends on its key and position, so a mix-up shows. */
static void
fill(uint8_t *buf, uint32_t len, const char *key)
{
	uint32_t seed = 2166136261u;

	for (const char *p = key; *p; p++) {
		seed = (seed ^ (uint8_t)*p) * 16777619u;
	}
	for (uint32_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
}

static struct spdk_nvme_ns *
find_kv_ns(struct spdk_nvme_ctrlr *ctrlr, uint32_t want)
{
	uint32_t nsid;

	for (nsid = spdk_nvme_ctrlr_get_first_active_ns(ctrlr); nsid != 0;
	     nsid = spdk_nvme_ctrlr_get_next_active_ns(ctrlr, nsid)) {
		struct spdk_nvme_ns *ns = spdk_nvme_ctrlr_get_ns(ctrlr, nsid);
		const struct spdk_nvme_kv_ns_data *kv;

		printf("namespace %u: CSI %u\n", nsid, (unsigned)spdk_nvme_ns_get_csi(ns));
		if (spdk_nvme_ns_get_csi(ns) != SPDK_NVME_CSI_KV || (want != 0 && nsid != want)) {
			continue;
		}
		kv = spdk_nvme_kv_ns_get_data(ns);
		if (kv == NULL) {
			printf("namespace %u: CSI KV but no KV namespace data\n", nsid);
			continue;
		}
		printf("namespace %u: KV, NSZE %" PRIu64 " bytes, NUSE %" PRIu64 " bytes, "
		       "formats %u, key max %u, value max %u, max keys %u\n", nsid, kv->nsze,
		       kv->nuse, kv->nkvf + 1u, kv->kvf[0].kvkml, kv->kvf[0].kvvml, kv->kvf[0].mnks);
		return ns;
	}
	return NULL;
}

static void
store(struct spdk_nvme_ns *ns, struct spdk_nvme_qpair *q, const char *key, uint8_t *val,
      uint32_t len, uint8_t opts, unsigned want_sc)
{
	struct waiter w = {0};
	char what[128];
	int rc;

	rc = spdk_nvme_kv_store(ns, q, key, strlen(key), val, len, on_done, &w, opts);
	if (rc != 0) {
		fprintf(stderr, "kv_try: store submit: %d\n", rc);
		exit(2);
	}
	wait_for(q, &w);
	snprintf(what, sizeof(what), "store %s, %u bytes, options 0x%x -> %s", key, len, opts,
		 want_sc == 0 ? "success" : "refused");
	check(want_sc == 0 ? !spdk_nvme_cpl_is_error(&w.cpl) : is_status(&w, 1, want_sc), what, &w);
}

static void
retrieve(struct spdk_nvme_ns *ns, struct spdk_nvme_qpair *q, const char *key,
	 const uint8_t *want, uint32_t len, uint32_t buf_len)
{
	struct waiter w = {0};
	uint8_t *buf = spdk_zmalloc(buf_len, 4096, NULL, SPDK_ENV_NUMA_ID_ANY, SPDK_MALLOC_DMA);
	uint32_t got;
	char what[160];
	bool ok;

	if (buf == NULL || spdk_nvme_kv_retrieve(ns, q, key, strlen(key), buf, buf_len, on_done,
			&w, 0) != 0) {
		fprintf(stderr, "kv_try: retrieve submit failed\n");
		exit(2);
	}
	wait_for(q, &w);
	got = len < buf_len ? len : buf_len;
	if (want == NULL) {
		snprintf(what, sizeof(what), "retrieve %s -> key does not exist (0x87)", key);
		check(is_status(&w, 1, SPDK_NVME_SC_KV_KEY_DOES_NOT_EXIST), what, &w);
	} else {
		ok = !spdk_nvme_cpl_is_error(&w.cpl) && w.cpl.cdw0 == len &&
		     memcmp(buf, want, got) == 0;
		snprintf(what, sizeof(what), "retrieve %s into %u bytes: value size %u, first %u "
			 "bytes equal to what was stored", key, buf_len, len, got);
		check(ok, what, &w);
	}
	spdk_free(buf);
}

static void
simple(struct spdk_nvme_ns *ns, struct spdk_nvme_qpair *q, bool delete, const char *key,
       unsigned want_sc)
{
	struct waiter w = {0};
	char what[128];
	int rc;

	rc = delete ? spdk_nvme_kv_delete(ns, q, key, strlen(key), on_done, &w)
	     : spdk_nvme_kv_exist(ns, q, key, strlen(key), on_done, &w);
	if (rc != 0) {
		fprintf(stderr, "kv_try: submit: %d\n", rc);
		exit(2);
	}
	wait_for(q, &w);
	snprintf(what, sizeof(what), "%s %s -> %s", delete ? "delete" : "exist", key,
		 want_sc == 0 ? "success" : "key does not exist (0x87)");
	check(want_sc == 0 ? !spdk_nvme_cpl_is_error(&w.cpl) : is_status(&w, 1, want_sc), what, &w);
}

/* A key an earlier run may have left: deleted, whatever the answer. */
static void
forget(struct spdk_nvme_ns *ns, struct spdk_nvme_qpair *q, const char *key)
{
	struct waiter w = {0};

	if (spdk_nvme_kv_delete(ns, q, key, strlen(key), on_done, &w) == 0) {
		wait_for(q, &w);
	}
}

/* List from the empty key: the keys come back in order, each one of ours once. */
static void
list(struct spdk_nvme_ns *ns, struct spdk_nvme_qpair *q, const char **keys, int nkeys,
     bool present)
{
	struct waiter w = {0};
	uint8_t *buf = spdk_zmalloc(LIST_BUF, 4096, NULL, SPDK_ENV_NUMA_ID_ANY, SPDK_MALLOC_DMA);
	uint32_t count, off = 4, i;
	int found = 0;
	bool ordered = true;
	char prev[17] = "", what[160];

	if (buf == NULL || spdk_nvme_kv_list(ns, q, NULL, 0, buf, LIST_BUF, on_done, &w) != 0) {
		fprintf(stderr, "kv_try: list submit failed\n");
		exit(2);
	}
	wait_for(q, &w);
	memcpy(&count, buf, 4);
	printf("list: %u keys:", count);
	for (i = 0; i < count && off + 2 <= LIST_BUF; i++) {
		uint16_t kl;
		char k[17] = "";

		memcpy(&kl, buf + off, 2);
		if (kl > 16 || off + 2 + kl > LIST_BUF) {
			ordered = false;
			break;
		}
		memcpy(k, buf + off + 2, kl);
		printf(" %s", k);
		if (strcmp(prev, k) >= 0 && i > 0) {
			ordered = false;
		}
		memcpy(prev, k, sizeof(prev));
		for (int j = 0; j < nkeys; j++) {
			found += strcmp(k, keys[j]) == 0;
		}
		off += (2 + kl + 3) & ~3u;
	}
	printf("\n");
	snprintf(what, sizeof(what), "list from the start: in order, %s", present ?
		 "every stored key once" : "none of the deleted keys");
	check(!spdk_nvme_cpl_is_error(&w.cpl) && ordered && found == (present ? nkeys : 0), what,
	      &w);
	spdk_free(buf);
}

static void
run(struct spdk_nvme_ns *ns, struct spdk_nvme_qpair *q, bool digests)
{
	/* In the capsule (8 KiB), one R2T and one H2CData, one R2T and three H2CData (128 KiB).
	 * With digests, a small value of 12 bytes: SPDK's data digest pads data to 4 bytes, and
	 * its CRC32C of that padding can read past it (docs/nvme-tcp.md, "Tried with SPDK"). */
	static const char *keys[] = {"spdk:small", "spdk:64k", "spdk:300k"};
	uint32_t lens[] = {digests ? 12 : 13, 65536, 300000};
	uint8_t *vals[3];
	int i;

	for (i = 0; i < 3; i++) {
		vals[i] = spdk_zmalloc(lens[i], 4096, NULL, SPDK_ENV_NUMA_ID_ANY, SPDK_MALLOC_DMA);
		if (vals[i] == NULL) {
			fprintf(stderr, "kv_try: no memory\n");
			exit(2);
		}
		fill(vals[i], lens[i], keys[i]);
		forget(ns, q, keys[i]);
	}
	printf("--- store\n");
	for (i = 0; i < 3; i++) {
		store(ns, q, keys[i], vals[i], lens[i], 0, 0);
	}
	store(ns, q, keys[0], vals[0], lens[0], SPDK_NVME_KV_STORE_OPT_DONT_STORE_IF_KEY_EXISTS,
	      SPDK_NVME_SC_KEY_EXISTS);
	store(ns, q, "spdk:absent", vals[0], lens[0],
	      SPDK_NVME_KV_STORE_OPT_DONT_STORE_IF_KEY_NOT_EXISTS, SPDK_NVME_SC_KV_KEY_DOES_NOT_EXIST);
	printf("--- retrieve and exist\n");
	for (i = 0; i < 3; i++) {
		retrieve(ns, q, keys[i], vals[i], lens[i], lens[i]);
		simple(ns, q, false, keys[i], 0);
	}
	retrieve(ns, q, keys[1], vals[1], lens[1], 4096); /* a buffer smaller than the value */
	printf("--- list\n");
	list(ns, q, keys, 3, true);
	printf("--- delete\n");
	for (i = 0; i < 3; i++) {
		simple(ns, q, true, keys[i], 0);
	}
	for (i = 0; i < 3; i++) {
		simple(ns, q, false, keys[i], SPDK_NVME_SC_KV_KEY_DOES_NOT_EXIST);
		retrieve(ns, q, keys[i], NULL, 0, 4096);
		simple(ns, q, true, keys[i], SPDK_NVME_SC_KV_KEY_DOES_NOT_EXIST);
	}
	list(ns, q, keys, 3, false);
	for (i = 0; i < 3; i++) {
		spdk_free(vals[i]);
	}
}

int
main(int argc, char **argv)
{
	struct spdk_env_opts env;
	struct spdk_nvme_transport_id trid = {0};
	struct spdk_nvme_ctrlr_opts copts;
	struct spdk_nvme_ctrlr *ctrlr;
	struct spdk_nvme_qpair *q;
	struct spdk_nvme_ns *ns;
	const struct spdk_nvme_ctrlr_data *cd;
	const char *hostnqn = NULL, *trstr = NULL, *keyfile = NULL;
	struct spdk_key *key = NULL;
	uint32_t want = 0;
	int mem = 256, op;
	bool digests = false;

	while ((op = getopt(argc, argv, "r:H:n:s:K:D")) != -1) {
		switch (op) {
		case 'r': trstr = optarg; break;
		case 'H': hostnqn = optarg; break;
		case 'n': want = (uint32_t)atoi(optarg); break;
		case 's': mem = atoi(optarg); break;
		case 'K': keyfile = optarg; break;
		case 'D': digests = true; break;
		default:
			fprintf(stderr, USAGE, argv[0]);
			return 2;
		}
	}
	if (trstr == NULL || hostnqn == NULL || spdk_nvme_transport_id_parse(&trid, trstr) != 0) {
		fprintf(stderr, USAGE, argv[0]);
		return 2;
	}
	env.opts_size = sizeof(env);
	spdk_env_opts_init(&env);
	env.name = "kv_try";
	env.no_huge = true;
	env.mem_size = mem;
	env.no_pci = true;
	env.core_mask = "0x1";
	if (spdk_env_init(&env) < 0) {
		fprintf(stderr, "kv_try: spdk_env_init failed\n");
		return 2;
	}
	spdk_nvme_ctrlr_get_default_ctrlr_opts(&copts, sizeof(copts));
	snprintf(copts.hostnqn, sizeof(copts.hostnqn), "%s", hostnqn);
	copts.header_digest = digests;
	copts.data_digest = digests;
	if (digests) {
		printf("header and data digests asked for\n");
	}
	if (keyfile != NULL) {
		if (spdk_keyring_init() != 0 || spdk_keyring_file_add_key("kv_try", keyfile) != 0 ||
		    (key = spdk_keyring_get_key("kv_try")) == NULL) {
			fprintf(stderr, "kv_try: cannot load the DH-HMAC-CHAP key in %s\n", keyfile);
			return 2;
		}
		copts.dhchap_key = key;
		printf("DH-HMAC-CHAP: key from %s\n", keyfile);
	}
	ctrlr = spdk_nvme_connect(&trid, &copts, sizeof(copts));
	if (ctrlr == NULL) {
		fprintf(stderr, "kv_try: spdk_nvme_connect failed\n");
		return 2;
	}
	cd = spdk_nvme_ctrlr_get_data(ctrlr);
	printf("controller: MN '%.40s' SN '%.20s' FR '%.8s' CNTLID %u, SUBNQN %s, KV data %s\n",
	       cd->mn, cd->sn, cd->fr, cd->cntlid, cd->subnqn,
	       spdk_nvme_kv_ctrlr_get_data(ctrlr) ? "present" : "absent");
	ns = find_kv_ns(ctrlr, want);
	if (ns == NULL) {
		fprintf(stderr, "kv_try: no active KV namespace for %s\n", hostnqn);
		spdk_nvme_detach(ctrlr);
		return 1;
	}
	q = spdk_nvme_ctrlr_alloc_io_qpair(ctrlr, NULL, 0);
	if (q == NULL) {
		fprintf(stderr, "kv_try: no I/O queue\n");
		return 2;
	}
	run(ns, q, digests);
	spdk_nvme_ctrlr_free_io_qpair(q);
	spdk_nvme_detach(ctrlr);
	if (key != NULL) {
		spdk_keyring_put_key(key);
		spdk_keyring_file_remove_key("kv_try");
		spdk_keyring_cleanup();
	}
	spdk_env_fini();
	printf("kv_try: %d passed, %d failed\n", g_checks - g_failures, g_failures);
	return g_failures == 0 ? 0 : 1;
}
