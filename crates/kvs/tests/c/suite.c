/* The C suite: every call kvs_api.h declares, through a device the Rust test started
 * (argv[1] its URI; credentials in the environment). */
#include "suite.h"

#include <string.h>

int checks_run, checks_failed;

int checks_end(void) {
  if (checks_failed) {
    printf("%d of %d checks FAILED\n", checks_failed, checks_run);
    return 1;
  }
  printf("all %d checks passed\n", checks_run);
  return 0;
}

kvs_key key_of(const char *s) {
  kvs_key k;
  k.key = (void *)s;
  k.length = (uint16_t)strlen(s);
  return k;
}

kvs_key_space_name name_of(const char *s) {
  kvs_key_space_name n;
  n.name = (char *)s;
  n.name_len = (uint32_t)strlen(s);
  return n;
}

void put(kvs_key_space_handle ks, const char *key, const char *value) {
  kvs_key k = key_of(key);
  kvs_value v = {(void *)value, (uint32_t)strlen(value), 0, 0};
  kvs_option_store opt = {KVS_STORE_POST, NULL};
  EXPECT(kvs_store_kvp(ks, &k, &v, &opt), KVS_SUCCESS, "store for a later check");
}

void suite_device(kvs_device_handle dev) {
  uint32_t n = 0;
  uint64_t cap = 0;
  kvs_device info;
  memset(&info, 0, sizeof info);
  EXPECT(kvs_get_device_info(dev, &info), KVS_SUCCESS, "device info");
  CHECK(info.max_key_len >= 16 && info.max_value_len >= 4096, "device limits");
  EXPECT(kvs_get_min_key_length(dev, &n), KVS_SUCCESS, "min key length");
  CHECK(n == 1, "min key length is 1");
  EXPECT(kvs_get_max_key_length(dev, &n), KVS_SUCCESS, "max key length");
  CHECK(n == info.max_key_len, "max key length as device info");
  EXPECT(kvs_get_min_value_length(dev, &n), KVS_SUCCESS, "min value length");
  CHECK(n == 0, "min value length is 0");
  EXPECT(kvs_get_max_value_length(dev, &n), KVS_SUCCESS, "max value length");
  CHECK(n == info.max_value_len, "max value length as device info");
  EXPECT(kvs_get_optimal_value_length(dev, &n), KVS_SUCCESS, "optimal value length");
  CHECK(n == 4096, "optimal value length");
  EXPECT(kvs_get_device_capacity(dev, &cap), KVS_SUCCESS, "capacity");
  EXPECT(kvs_get_device_utilization(dev, &n), KVS_SUCCESS, "utilization");
  CHECK(n <= 10000, "utilization within 0..10000");
  /* Bad arguments are codes, never crashes. */
  EXPECT(kvs_get_device_info(dev, NULL), KVS_ERR_PARAM_INVALID, "info NULL out");
  EXPECT(kvs_get_max_key_length(dev, NULL), KVS_ERR_PARAM_INVALID, "length NULL out");
  EXPECT(kvs_get_device_capacity(dev, NULL), KVS_ERR_PARAM_INVALID, "capacity NULL out");
  EXPECT(kvs_get_device_utilization(dev, NULL), KVS_ERR_PARAM_INVALID, "utilization NULL");
  EXPECT(kvs_get_device_info(NULL, &info), KVS_ERR_DEV_NOT_EXIST, "info of NULL device");
  EXPECT(kvs_get_min_key_length((kvs_device_handle)0x1234, &n), KVS_ERR_DEV_NOT_EXIST,
         "forged device handle");
}

void suite_key_spaces(kvs_device_handle dev) {
  kvs_option_key_space opt = {KVS_KEY_ORDER_NONE};
  kvs_key_space_name a = name_of("suite_a"), b = name_of("suite_b");
  kvs_key_space_name bad = name_of("../escape"), none = name_of("suite_none");
  EXPECT(kvs_create_key_space(dev, &a, 0, opt), KVS_SUCCESS, "create suite_a");
  EXPECT(kvs_create_key_space(dev, &b, 1 << 20, opt), KVS_SUCCESS, "create suite_b (1 MiB)");
  EXPECT(kvs_create_key_space(dev, &a, 0, opt), KVS_ERR_KS_EXIST, "create twice");
  EXPECT(kvs_create_key_space(dev, &bad, 0, opt), KVS_ERR_KS_NAME, "create a path name");
  EXPECT(kvs_create_key_space(dev, NULL, 0, opt), KVS_ERR_PARAM_INVALID, "create NULL name");
  EXPECT(kvs_delete_key_space(dev, &none), KVS_ERR_KS_NOT_EXIST, "delete a missing one");
  EXPECT(kvs_delete_key_space(dev, NULL), KVS_ERR_PARAM_INVALID, "delete NULL name");

  char bufs[8][64];
  kvs_key_space_name names[8];
  for (int i = 0; i < 8; i++) {
    names[i].name = bufs[i];
    names[i].name_len = sizeof bufs[i];
  }
  uint32_t cnt = 0;
  EXPECT(kvs_list_key_spaces(dev, 1, sizeof names, names, &cnt), KVS_SUCCESS, "list");
  int seen_a = 0, seen_b = 0;
  for (uint32_t i = 0; i < cnt; i++) {
    seen_a |= strcmp(names[i].name, "suite_a") == 0;
    seen_b |= strcmp(names[i].name, "suite_b") == 0;
  }
  CHECK(cnt >= 2 && seen_a && seen_b, "list names both");
  EXPECT(kvs_list_key_spaces(dev, 2, sizeof names[0], names, &cnt), KVS_SUCCESS, "list from 2");
  CHECK(cnt == 1, "list one from index 2");
  EXPECT(kvs_list_key_spaces(dev, 0, sizeof names, names, &cnt), KVS_ERR_KS_INDEX, "index 0");
  EXPECT(kvs_list_key_spaces(dev, 99, sizeof names, names, &cnt), KVS_ERR_KS_INDEX, "index 99");
  EXPECT(kvs_list_key_spaces(dev, 1, sizeof names, NULL, &cnt), KVS_ERR_PARAM_INVALID,
         "list NULL names");
  EXPECT(kvs_list_key_spaces(dev, 1, sizeof names, names, NULL), KVS_ERR_PARAM_INVALID,
         "list NULL count");
  names[0].name_len = 3;
  EXPECT(kvs_list_key_spaces(dev, 1, sizeof names, names, &cnt), KVS_ERR_BUFFER_SMALL,
         "list into a 3-byte name");

  kvs_key_space_handle ks;
  EXPECT(kvs_open_key_space(dev, (char *)"suite_none", &ks), KVS_ERR_KS_NOT_EXIST,
         "open a missing key space");
  EXPECT(kvs_open_key_space(dev, NULL, &ks), KVS_ERR_PARAM_INVALID, "open NULL name");
  EXPECT(kvs_open_key_space(dev, (char *)"suite_a", NULL), KVS_ERR_PARAM_INVALID,
         "open NULL handle out");
}

static void suite_info(kvs_key_space_handle ks) {
  char name[64];
  kvs_key_space_name n = {sizeof name, name};
  kvs_key_space info;
  memset(&info, 0, sizeof info);
  info.name = &n;
  EXPECT(kvs_get_key_space_info(ks, &info), KVS_SUCCESS, "key space info");
  CHECK(info.opened && strcmp(name, "suite_a") == 0 && n.name_len == 7, "info names it");
  CHECK(info.count >= 1, "info counts pairs");
  EXPECT(kvs_get_key_space_info(ks, NULL), KVS_ERR_PARAM_INVALID, "info NULL out");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s URI\n", argv[0]);
    return 2;
  }
  kvs_device_handle dev;
  EXPECT(kvs_open_device(NULL, &dev), KVS_ERR_PARAM_INVALID, "open NULL URI");
  EXPECT(kvs_open_device(argv[1], NULL), KVS_ERR_PARAM_INVALID, "open NULL handle out");
  EXPECT(kvs_open_device((char *)"/dev/kvemul", &dev), KVS_ERR_DEV_NOT_EXIST, "a kit path");
  EXPECT(kvs_open_device((char *)"127.0.0.1:1", &dev), KVS_ERR_DEV_NOT_EXIST, "nobody there");
  EXPECT(kvs_open_device(argv[1], &dev), KVS_SUCCESS, "open device");
  suite_device(dev);
  suite_key_spaces(dev);

  kvs_key_space_handle ks, again;
  EXPECT(kvs_open_key_space(dev, (char *)"suite_a", &ks), KVS_SUCCESS, "open suite_a");
  EXPECT(kvs_open_key_space(dev, (char *)"suite_a", &again), KVS_ERR_KS_OPEN, "open twice");
  suite_kvp(ks, dev);
  suite_info(ks);
  suite_iterators(ks);
  suite_async(ks);
  suite_threads(ks);
  suite_tenant(argv[1]);
  suite_memory();

  EXPECT(kvs_close_key_space(ks), KVS_SUCCESS, "close suite_a");
  EXPECT(kvs_close_key_space(ks), KVS_ERR_KS_NOT_OPEN, "close twice");
  kvs_key k = key_of("after-close");
  EXPECT(kvs_delete_kvp(ks, &k, NULL), KVS_ERR_KS_NOT_OPEN, "a call on a closed key space");
  kvs_key_space_name a = name_of("suite_a"), b = name_of("suite_b");
  EXPECT(kvs_delete_key_space(dev, &a), KVS_SUCCESS, "delete suite_a");
  EXPECT(kvs_delete_key_space(dev, &b), KVS_SUCCESS, "delete suite_b");
  EXPECT(kvs_open_key_space(dev, (char *)"suite_a", &ks), KVS_ERR_KS_NOT_EXIST,
         "deleted is gone");
  EXPECT(kvs_close_device(dev), KVS_SUCCESS, "close device");
  EXPECT(kvs_close_device(dev), KVS_ERR_DEV_NOT_EXIST, "close twice");
  return checks_end();
}
