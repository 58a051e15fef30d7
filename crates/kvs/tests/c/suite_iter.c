/* Iterators over key groups, key-only and key-value, in small buffers; deleting a group. */
#include "suite.h"

#include <string.h>

/* Entries one iterator yields in all, reading `size`-byte buffers; checks each entry's
 * layout and that every key starts with `prefix` (if not NULL). -1 on an error. */
static int drain(kvs_key_space_handle ks, kvs_iterator_handle it, uint32_t size,
                 int with_values, const char *prefix) {
  uint8_t *buf = (uint8_t *)kvs_malloc(size, 4096);
  kvs_iterator_list list;
  int total = 0, rounds = 0, well_formed = 1;
  for (;;) {
    list.size = size;
    list.it_list = buf;
    list.end = false;
    list.num_entries = 0;
    kvs_result r = kvs_iterate_next(ks, it, &list);
    if (r != KVS_SUCCESS) {
      printf("iterate_next: 0x%x\n", r);
      kvs_free(buf);
      return -1;
    }
    uint8_t *p = buf;
    for (uint32_t i = 0; i < list.num_entries; i++) {
      uint32_t klen;
      memcpy(&klen, p, 4);
      p += 4;
      if (prefix && memcmp(p, prefix, strlen(prefix)) != 0) well_formed = 0;
      p += klen;
      if (with_values) {
        uint32_t vlen;
        memcpy(&vlen, p, 4);
        p += 4;
        if (vlen != klen + 1 || memcmp(p, "v", 1) != 0) well_formed = 0;
        p += vlen;
      }
    }
    if ((uint32_t)(p - buf) != list.size) well_formed = 0;
    total += (int)list.num_entries;
    rounds++;
    if (list.end) break;
  }
  kvs_free(buf);
  CHECK(well_formed, "entries are length-prefixed, in the group");
  return rounds > 0 ? total : -1;
}

static void fill(kvs_key_space_handle ks, const char *prefix, int n) {
  for (int i = 0; i < n; i++) {
    char key[16], value[20];
    snprintf(key, sizeof key, "%s%02d", prefix, i);
    snprintf(value, sizeof value, "v%s", key); /* value: "v" + key */
    kvs_key k = key_of(key);
    kvs_value v = {value, (uint32_t)strlen(value), 0, 0};
    kvs_store_kvp(ks, &k, &v, NULL);
  }
}

static kvs_key_group_filter group(uint8_t m0, uint8_t m1, const char *pattern) {
  kvs_key_group_filter f;
  memset(&f, 0, sizeof f);
  f.bitmask[0] = m0;
  f.bitmask[1] = m1;
  memcpy(f.bit_pattern, pattern, 4);
  return f;
}

void suite_iterators(kvs_key_space_handle ks) {
  fill(ks, "aa", 20);
  fill(ks, "bb", 10);
  kvs_key_group_filter aa = group(0xff, 0xff, "aa00"), bb = group(0xff, 0xff, "bb00");
  kvs_key_group_filter every = group(0, 0, "zzzz"), bits = group(0xff, 0x02, "ab..");
  kvs_option_iterator keys = {KVS_ITERATOR_KEY}, pairs = {KVS_ITERATOR_KEY_VALUE};
  kvs_option_iterator bogus = {(kvs_iterator_type)9};
  kvs_iterator_handle it;

  EXPECT(kvs_create_iterator(ks, &keys, &aa, &it), KVS_SUCCESS, "key iterator on aa");
  CHECK(drain(ks, it, 64, 0, "aa") == 20, "20 aa keys, a few per 64-byte buffer");
  EXPECT(kvs_delete_iterator(ks, it), KVS_SUCCESS, "delete iterator");
  EXPECT(kvs_delete_iterator(ks, it), KVS_ERR_ITERATOR_NOT_EXIST, "delete twice");

  EXPECT(kvs_create_iterator(ks, &pairs, &bb, &it), KVS_SUCCESS, "key-value iterator on bb");
  CHECK(drain(ks, it, KVS_ITERATOR_BUFFER_SIZE, 1, "bb") == 10, "10 bb pairs with values");
  kvs_delete_iterator(ks, it);

  EXPECT(kvs_create_iterator(ks, &keys, &bits, &it), KVS_SUCCESS, "bit filter iterator");
  /* 'a' = 0x61 has bit 1 clear, 'b' = 0x62 has it set: byte 1 must be 'b'-like. */
  CHECK(drain(ks, it, 4096, 0, NULL) == 0, "no key starts with 'a' then 'b'");
  kvs_delete_iterator(ks, it);

  EXPECT(kvs_create_iterator(ks, &keys, &every, &it), KVS_SUCCESS, "iterator on all");
  CHECK(drain(ks, it, 4096, 0, NULL) >= 30, "every key");
  kvs_iterator_list tiny = {0, false, 4, NULL};
  uint8_t four[4];
  tiny.it_list = four;
  kvs_delete_iterator(ks, it);
  EXPECT(kvs_create_iterator(ks, &keys, &every, &it), KVS_SUCCESS, "again");
  EXPECT(kvs_iterate_next(ks, it, &tiny), KVS_ERR_BUFFER_SMALL, "4-byte buffer");
  EXPECT(kvs_iterate_next(ks, it, NULL), KVS_ERR_PARAM_INVALID, "NULL list");
  kvs_delete_iterator(ks, it);
  EXPECT(kvs_iterate_next(ks, it, &tiny), KVS_ERR_ITERATOR_NOT_EXIST, "next of deleted");
  EXPECT(kvs_iterate_next(ks, 0, &tiny), KVS_ERR_ITERATOR_NOT_EXIST, "next of handle 0");

  EXPECT(kvs_create_iterator(ks, &bogus, &aa, &it), KVS_ERR_OPTION_INVALID, "bad type");
  EXPECT(kvs_create_iterator(ks, NULL, &aa, &it), KVS_ERR_PARAM_INVALID, "NULL option");
  EXPECT(kvs_create_iterator(ks, &keys, NULL, &it), KVS_ERR_PARAM_INVALID, "NULL filter");
  EXPECT(kvs_create_iterator(ks, &keys, &aa, NULL), KVS_ERR_PARAM_INVALID, "NULL handle out");

  kvs_iterator_handle many[KVS_MAX_ITERATE_HANDLE];
  int opened = 0;
  for (int i = 0; i < KVS_MAX_ITERATE_HANDLE; i++)
    opened += kvs_create_iterator(ks, &keys, &aa, &many[i]) == KVS_SUCCESS;
  CHECK(opened == KVS_MAX_ITERATE_HANDLE, "16 iterators open");
  EXPECT(kvs_create_iterator(ks, &keys, &aa, &it), KVS_ERR_ITERATOR_MAX, "a 17th");
  for (int i = 0; i < opened; i++) kvs_delete_iterator(ks, many[i]);

  EXPECT(kvs_delete_key_group(ks, &bb), KVS_SUCCESS, "delete group bb");
  EXPECT(kvs_delete_key_group(ks, NULL), KVS_ERR_PARAM_INVALID, "delete group NULL");
  EXPECT(kvs_create_iterator(ks, &keys, &bb, &it), KVS_SUCCESS, "iterator on bb again");
  CHECK(drain(ks, it, 4096, 0, "bb") == 0, "bb is empty");
  kvs_delete_iterator(ks, it);
  EXPECT(kvs_create_iterator(ks, &keys, &aa, &it), KVS_SUCCESS, "iterator on aa again");
  CHECK(drain(ks, it, 4096, 0, "aa") == 20, "aa untouched");
  kvs_delete_iterator(ks, it);
}
