/* A device handle with a tenant's credential sees its own key space only; closing a device
 * waits for its queued async calls; the aligned buffers. */
#include "suite.h"

#include <pthread.h>
#include <string.h>

/* The secret kvs_create_key_space kept for suite_b (KVS_SUITE_SECRETS: its directory). */
static int read_secret(char *out, size_t room) {
  const char *dir = getenv("KVS_SUITE_SECRETS");
  if (!dir) return 0;
  char path[1024];
  snprintf(path, sizeof path, "%s/suite_b.secret", dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(out, 1, room - 1, f);
  fclose(f);
  out[n] = 0;
  return n > 0;
}

static int drained;
static void count(kvs_postprocess_context *ctx) {
  (void)ctx;
  __atomic_add_fetch(&drained, 1, __ATOMIC_SEQ_CST);
}

void suite_tenant(const char *uri) {
  char secret[256];
  CHECK(read_secret(secret, sizeof secret), "suite_b's secret was kept");
  char *admin = getenv("CERBERUS_ADMIN_SECRET");
  char *saved = admin ? strdup(admin) : NULL;
  kvs_device_handle refused;
  setenv("CERBERUS_ADMIN_SECRET", "not-the-admin-secret", 1);
  EXPECT(kvs_open_device((char *)uri, &refused), KVS_ERR_SYS_IO, "a wrong admin secret");
  unsetenv("CERBERUS_ADMIN_SECRET");
  setenv("CERBERUS_NS", "suite_b", 1);
  setenv("CERBERUS_SECRET", "not-its-secret", 1);
  EXPECT(kvs_open_device((char *)uri, &refused), KVS_ERR_SYS_IO, "a wrong tenant secret");
  setenv("CERBERUS_SECRET", secret, 1);

  kvs_device_handle dev;
  EXPECT(kvs_open_device((char *)uri, &dev), KVS_SUCCESS, "open as tenant suite_b");
  char buf[4][64];
  kvs_key_space_name names[4];
  for (int i = 0; i < 4; i++) {
    names[i].name = buf[i];
    names[i].name_len = 64;
  }
  uint32_t cnt = 0;
  EXPECT(kvs_list_key_spaces(dev, 1, sizeof names, names, &cnt), KVS_SUCCESS, "tenant list");
  CHECK(cnt == 1 && strcmp(buf[0], "suite_b") == 0, "the tenant sees its own only");
  kvs_key_space_handle other, own;
  EXPECT(kvs_open_key_space(dev, (char *)"suite_a", &other), KVS_ERR_KS_NOT_EXIST,
         "another tenant's key space is not there");
  kvs_key_space_name a = name_of("suite_a"), b = name_of("suite_b"), c = name_of("suite_c");
  EXPECT(kvs_delete_key_space(dev, &a), KVS_ERR_KS_NOT_EXIST, "nor can it be deleted");
  kvs_option_key_space opt = {KVS_KEY_ORDER_NONE};
  EXPECT(kvs_create_key_space(dev, &c, 0, opt), KVS_ERR_OPTION_INVALID, "creating needs admin");
  EXPECT(kvs_delete_key_space(dev, &b), KVS_ERR_OPTION_INVALID, "deleting needs admin");
  EXPECT(kvs_open_key_space(dev, (char *)"suite_b", &own), KVS_SUCCESS, "open its own");
  put(own, "tenant-key", "tenant-value");

  uint64_t cap = 0;
  uint32_t util = 99999;
  EXPECT(kvs_get_device_capacity(dev, &cap), KVS_SUCCESS, "tenant capacity");
  CHECK(cap == 1 << 20, "capacity is its quota");
  EXPECT(kvs_get_device_utilization(dev, &util), KVS_SUCCESS, "tenant utilization");
  CHECK(util <= 10000, "utilization in range");
  static char big[64 << 10];
  kvs_value v = {big, sizeof big, 0, 0};
  kvs_result r = KVS_SUCCESS;
  for (int i = 0; i < 64 && r == KVS_SUCCESS; i++) {
    char key[16];
    snprintf(key, sizeof key, "fill-%02d", i);
    kvs_key k = key_of(key);
    r = kvs_store_kvp(own, &k, &v, NULL);
  }
  CHECK(r == KVS_ERR_KS_CAPACITY, "a full quota is KVS_ERR_KS_CAPACITY");

  /* Closing waits for what was queued. */
  kvs_key k = key_of("tenant-key");
  kvs_option_delete lax = {false};
  int queued = 0;
  for (int i = 0; i < 32; i++)
    queued += kvs_delete_kvp_async(own, &k, &lax, NULL, NULL, count) == KVS_SUCCESS;
  EXPECT(kvs_close_device(dev), KVS_SUCCESS, "close the tenant's device");
  CHECK(__atomic_load_n(&drained, __ATOMIC_SEQ_CST) == queued, "close waited for callbacks");
  EXPECT(kvs_close_key_space(own), KVS_ERR_KS_NOT_OPEN, "its key spaces closed with it");

  unsetenv("CERBERUS_NS");
  unsetenv("CERBERUS_SECRET");
  if (saved) {
    setenv("CERBERUS_ADMIN_SECRET", saved, 1);
    free(saved);
  }
}

void suite_memory(void) {
  char *p = (char *)kvs_malloc(1000, 4096);
  CHECK(p && ((uintptr_t)p % 4096) == 0, "kvs_malloc aligns");
  char *z = (char *)kvs_zalloc(1000, 512);
  int zeroed = z != NULL;
  for (int i = 0; z && i < 1000; i++) zeroed &= z[i] == 0;
  CHECK(zeroed && ((uintptr_t)z % 512) == 0, "kvs_zalloc zeroes");
  kvs_memstat();
  kvs_free(p);
  kvs_free(z);
  kvs_free(NULL);
  CHECK(1, "kvs_free of NULL is nothing");
}
