/* The synchronous key-value calls: store, retrieve (whole, partial, at offsets), kvp info,
 * exist, delete, and their error codes. */
#include "suite.h"

#include <string.h>

static void suite_store_errors(kvs_key_space_handle ks, kvs_device_handle dev) {
  char data[16] = "0123456789abcdef";
  kvs_key k = key_of("store-errors"), empty = {data, 0}, nullbytes = {NULL, 4};
  kvs_value v = {data, 16, 0, 0}, nullvalue = {NULL, 5, 0, 0};
  kvs_option_store post = {KVS_STORE_POST, NULL};
  kvs_option_store update = {KVS_STORE_UPDATE_ONLY, NULL};
  kvs_option_store create = {KVS_STORE_NOOVERWRITE, NULL};
  kvs_option_store append = {KVS_STORE_APPEND, NULL};
  kvs_option_store bogus = {(kvs_store_type)42, NULL};
  EXPECT(kvs_store_kvp(ks, &k, &v, &update), KVS_ERR_KEY_NOT_EXIST, "update-only, absent");
  EXPECT(kvs_store_kvp(ks, &k, &v, &create), KVS_SUCCESS, "no-overwrite, absent");
  EXPECT(kvs_store_kvp(ks, &k, &v, &create), KVS_ERR_VALUE_UPDATE_NOT_ALLOWED,
         "no-overwrite, present");
  EXPECT(kvs_store_kvp(ks, &k, &v, &update), KVS_SUCCESS, "update-only, present");
  EXPECT(kvs_store_kvp(ks, &k, &v, &append), KVS_ERR_OPTION_INVALID, "append unsupported");
  EXPECT(kvs_store_kvp(ks, &k, &v, &bogus), KVS_ERR_OPTION_INVALID, "unknown store type");
  EXPECT(kvs_store_kvp(ks, &k, &v, NULL), KVS_SUCCESS, "NULL option is a post");
  EXPECT(kvs_store_kvp(ks, NULL, &v, &post), KVS_ERR_PARAM_INVALID, "NULL key");
  EXPECT(kvs_store_kvp(ks, &empty, &v, &post), KVS_ERR_KEY_LENGTH_INVALID, "empty key");
  EXPECT(kvs_store_kvp(ks, &nullbytes, &v, &post), KVS_ERR_PARAM_INVALID, "NULL key bytes");
  EXPECT(kvs_store_kvp(ks, &k, NULL, &post), KVS_ERR_PARAM_INVALID, "NULL value");
  EXPECT(kvs_store_kvp(ks, &k, &nullvalue, &post), KVS_ERR_PARAM_INVALID, "NULL value bytes");
  EXPECT(kvs_store_kvp(NULL, &k, &v, &post), KVS_ERR_PARAM_INVALID, "NULL key space");
  EXPECT(kvs_store_kvp((kvs_key_space_handle)0x77, &k, &v, &post), KVS_ERR_KS_NOT_OPEN,
         "forged key space");

  uint32_t max_key = 0, max_value = 0;
  kvs_get_max_key_length(dev, &max_key);
  kvs_get_max_value_length(dev, &max_value);
  char *big = (char *)calloc(1, (size_t)max_value + 1);
  kvs_key long_key = {big, (uint16_t)(max_key + 1)};
  kvs_value big_value = {big, max_value + 1, 0, 0};
  kvs_value max_size = {big, max_value, 0, 0};
  if (max_key < 65535)
    EXPECT(kvs_store_kvp(ks, &long_key, &v, &post), KVS_ERR_KEY_LENGTH_INVALID, "key too long");
  EXPECT(kvs_store_kvp(ks, &k, &big_value, &post), KVS_ERR_VALUE_LENGTH_INVALID,
         "value too large");
  EXPECT(kvs_store_kvp(ks, &k, &max_size, &post), KVS_SUCCESS, "largest value");
  free(big);
  kvs_value zero = {NULL, 0, 0, 0};
  EXPECT(kvs_store_kvp(ks, &k, &zero, &post), KVS_SUCCESS, "empty value");
  char out[8];
  kvs_value got = {out, sizeof out, 99, 0};
  kvs_option_retrieve keep = {false};
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &got), KVS_SUCCESS, "retrieve empty value");
  CHECK(got.length == 0 && got.actual_value_size == 0, "empty value reads empty");
}

static void suite_retrieve(kvs_key_space_handle ks) {
  static char value[1000], out[2048];
  for (int i = 0; i < 1000; i++) value[i] = (char)('a' + i % 26);
  kvs_key k = key_of("retrieve-me");
  kvs_value v = {value, sizeof value, 0, 0};
  kvs_option_store post = {KVS_STORE_POST, NULL};
  kvs_option_retrieve keep = {false}, take = {true};
  EXPECT(kvs_store_kvp(ks, &k, &v, &post), KVS_SUCCESS, "store 1000 bytes");

  kvs_value whole = {out, sizeof out, 0, 0};
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &whole), KVS_SUCCESS, "retrieve whole");
  CHECK(whole.length == 1000 && whole.actual_value_size == 1000 &&
            memcmp(out, value, 1000) == 0,
        "whole value back");

  memset(out, 0, sizeof out);
  kvs_value small = {out, 10, 0, 0};
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &small), KVS_ERR_BUFFER_SMALL, "10-byte buffer");
  CHECK(small.actual_value_size == 1000 && memcmp(out, value, 10) == 0 && out[10] == 0,
        "partial retrieve: first 10 bytes, actual size");

  kvs_value at512 = {out, sizeof out, 0, 512};
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &at512), KVS_SUCCESS, "retrieve from offset 512");
  CHECK(at512.length == 488 && memcmp(out, value + 512, 488) == 0, "tail from 512");
  kvs_value odd = {out, sizeof out, 0, 3};
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &odd), KVS_ERR_VALUE_OFFSET_MISALIGNED, "offset 3");
  kvs_value past = {out, sizeof out, 0, 2048};
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &past), KVS_ERR_VALUE_OFFSET_INVALID, "offset 2048");
  kvs_value nobuf = {NULL, 0, 0, 0};
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &nobuf), KVS_ERR_BUFFER_SMALL, "no buffer");
  CHECK(nobuf.actual_value_size == 1000, "no buffer still says the size");
  kvs_value nullbuf = {NULL, 10, 0, 0};
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &nullbuf), KVS_ERR_PARAM_INVALID, "NULL buffer");
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, NULL), KVS_ERR_PARAM_INVALID, "NULL kvs_value");
  EXPECT(kvs_retrieve_kvp(ks, NULL, &keep, &whole), KVS_ERR_PARAM_INVALID, "NULL key");

  uint8_t keybuf[32];
  kvs_kvp_info info = {0, keybuf, 0};
  EXPECT(kvs_get_kvp_info(ks, &k, &info), KVS_SUCCESS, "kvp info");
  CHECK(info.key_len == 11 && info.value_len == 1000 && memcmp(keybuf, "retrieve-me", 11) == 0,
        "kvp info says key and value length");
  EXPECT(kvs_get_kvp_info(ks, &k, NULL), KVS_ERR_PARAM_INVALID, "kvp info NULL out");

  kvs_value taken = {out, sizeof out, 0, 0};
  EXPECT(kvs_retrieve_kvp(ks, &k, &take, &taken), KVS_SUCCESS, "retrieve and delete");
  EXPECT(kvs_retrieve_kvp(ks, &k, &keep, &whole), KVS_ERR_KEY_NOT_EXIST, "taken is gone");
  EXPECT(kvs_get_kvp_info(ks, &k, &info), KVS_ERR_KEY_NOT_EXIST, "kvp info of a missing key");
}

static void suite_exist_delete(kvs_key_space_handle ks) {
  put(ks, "exists-1", "x");
  put(ks, "exists-3", "y");
  kvs_key keys[3] = {key_of("exists-1"), key_of("exists-2"), key_of("exists-3")};
  uint8_t bits = 0xff;
  kvs_exist_list list;
  memset(&list, 0, sizeof list);
  list.result_buffer = &bits;
  list.length = 1;
  EXPECT(kvs_exist_kv_pairs(ks, 3, keys, &list), KVS_SUCCESS, "exist of three");
  CHECK(bits == 0x5, "first and third exist, second not");
  kvs_key nine[9];
  for (int i = 0; i < 9; i++) nine[i] = keys[0];
  EXPECT(kvs_exist_kv_pairs(ks, 9, nine, &list), KVS_ERR_BUFFER_SMALL, "9 keys, 1 byte");
  EXPECT(kvs_exist_kv_pairs(ks, 3, keys, NULL), KVS_ERR_PARAM_INVALID, "exist NULL list");
  EXPECT(kvs_exist_kv_pairs(ks, 0, keys, &list), KVS_ERR_PARAM_INVALID, "exist no keys");
  EXPECT(kvs_exist_kv_pairs(ks, 3, NULL, &list), KVS_ERR_PARAM_INVALID, "exist NULL keys");

  kvs_option_delete strict = {true}, lax = {false};
  EXPECT(kvs_delete_kvp(ks, &keys[0], &strict), KVS_SUCCESS, "delete present");
  EXPECT(kvs_delete_kvp(ks, &keys[0], &strict), KVS_ERR_KEY_NOT_EXIST, "strict delete absent");
  EXPECT(kvs_delete_kvp(ks, &keys[0], &lax), KVS_SUCCESS, "lax delete absent");
  EXPECT(kvs_delete_kvp(ks, &keys[2], NULL), KVS_SUCCESS, "delete, NULL option");
  EXPECT(kvs_delete_kvp(ks, NULL, NULL), KVS_ERR_PARAM_INVALID, "delete NULL key");
  EXPECT(kvs_exist_kv_pairs(ks, 3, keys, &list), KVS_SUCCESS, "exist after deletes");
  CHECK(bits == 0, "none exist");
}

void suite_kvp(kvs_key_space_handle ks, kvs_device_handle dev) {
  suite_store_errors(ks, dev);
  suite_retrieve(ks);
  suite_exist_delete(ks);
}
