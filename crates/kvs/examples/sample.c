/* A sample program for the SNIA KV API on a Cerberus device: creates a key space, stores,
 * retrieves, checks, iterates and deletes pairs, and stores one asynchronously.
 *
 *   cc -I crates/kvs/include crates/kvs/examples/sample.c -L target/release \
 *      -lcerberus_kvs -lpthread -o sample
 *   CERBERUS_ADMIN_SECRET=... ./sample 127.0.0.1:9420
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kvs_api.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int async_done = 0;
static kvs_result async_result;

/* Runs on one of the library's threads once the async store is done. */
static void stored(kvs_postprocess_context *ctx) {
  pthread_mutex_lock(&lock);
  async_result = ctx->result;
  async_done = 1;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&lock);
}

#define TRY(call)                                                     \
  do {                                                                \
    kvs_result r_ = (call);                                           \
    if (r_ != KVS_SUCCESS) {                                          \
      fprintf(stderr, "%s failed: 0x%x\n", #call, (unsigned)r_);      \
      return 1;                                                       \
    }                                                                 \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DEVICE-URI\n", argv[0]);
    return 2;
  }
  kvs_device_handle dev;
  kvs_key_space_handle ks;
  char ks_name[] = "sample";
  kvs_key_space_name name = {(uint32_t)strlen(ks_name), ks_name};
  kvs_option_key_space ks_opt = {KVS_KEY_ORDER_NONE};
  TRY(kvs_open_device(argv[1], &dev));
  TRY(kvs_create_key_space(dev, &name, 0, ks_opt));
  TRY(kvs_open_key_space(dev, ks_name, &ks));

  /* Store ten pairs, key0000 .. key0009. */
  for (int i = 0; i < 10; i++) {
    char key[8], value[32];
    snprintf(key, sizeof key, "key%04d", i);
    snprintf(value, sizeof value, "value of %s", key);
    kvs_key k = {key, 7};
    kvs_value v = {value, (uint32_t)strlen(value), 0, 0};
    kvs_option_store opt = {KVS_STORE_POST, NULL};
    TRY(kvs_store_kvp(ks, &k, &v, &opt));
  }

  /* Read one back. */
  char buf[64];
  kvs_key k = {(void *)"key0003", 7};
  kvs_value v = {buf, sizeof buf - 1, 0, 0};
  kvs_option_retrieve ropt = {false};
  TRY(kvs_retrieve_kvp(ks, &k, &ropt, &v));
  buf[v.length] = 0;
  printf("retrieved key0003: %s\n", buf);

  /* Does it exist? Delete it; does it now? */
  uint8_t bit = 0;
  kvs_exist_list list = {1, &k, 1, &bit};
  TRY(kvs_exist_kv_pairs(ks, 1, &k, &list));
  printf("key0003 exists: %d\n", bit & 1);
  kvs_option_delete dopt = {true};
  TRY(kvs_delete_kvp(ks, &k, &dopt));
  TRY(kvs_exist_kv_pairs(ks, 1, &k, &list));
  printf("after delete, key0003 exists: %d\n", bit & 1);

  /* One store on the library's threads. */
  kvs_key ak = {(void *)"key9999", 7};
  kvs_value av = {(void *)"stored asynchronously", 21, 0, 0};
  kvs_option_store aopt = {KVS_STORE_POST, NULL};
  TRY(kvs_store_kvp_async(ks, &ak, &av, &aopt, NULL, NULL, stored));
  pthread_mutex_lock(&lock);
  while (!async_done) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  printf("async store: 0x%x\n", (unsigned)async_result);

  /* Iterate the keys starting "key" (the key group: first 3 bytes). */
  kvs_iterator_handle it;
  kvs_option_iterator iopt = {KVS_ITERATOR_KEY};
  kvs_key_group_filter group = {{0xff, 0xff, 0xff, 0}, {'k', 'e', 'y', 0}};
  TRY(kvs_create_iterator(ks, &iopt, &group, &it));
  static uint8_t entries[KVS_ITERATOR_BUFFER_SIZE];
  int total = 0;
  kvs_iterator_list il;
  do {
    il.size = sizeof entries;
    il.it_list = entries;
    il.num_entries = 0;
    il.end = false;
    TRY(kvs_iterate_next(ks, it, &il));
    uint8_t *p = entries;
    for (uint32_t i = 0; i < il.num_entries; i++) {
      uint32_t len;
      memcpy(&len, p, 4);
      printf("  %.*s\n", (int)len, (const char *)p + 4);
      p += 4 + len;
    }
    total += (int)il.num_entries;
  } while (!il.end);
  TRY(kvs_delete_iterator(ks, it));
  printf("iterated %d keys\n", total);

  TRY(kvs_close_key_space(ks));
  TRY(kvs_delete_key_space(dev, &name));
  TRY(kvs_close_device(dev));
  return async_result == KVS_SUCCESS && total == 10 ? 0 : 1;
}
