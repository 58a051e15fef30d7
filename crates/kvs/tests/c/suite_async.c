/* The _async calls: callbacks on the library's threads, with the context filled in. */
#include "suite.h"

#include <pthread.h>
#include <string.h>

#define N 64

struct tally {
  pthread_mutex_t lock;
  pthread_cond_t done;
  int completed, ok, bad_ctx;
};

static struct tally t = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
static int marker;

static void on_done(kvs_postprocess_context *ctx) {
  pthread_mutex_lock(&t.lock);
  int want = (int)(intptr_t)ctx->private2;
  if (ctx->private1 != &marker || (int)ctx->context != want) t.bad_ctx++;
  if (ctx->result == KVS_SUCCESS) t.ok++;
  t.completed++;
  pthread_cond_broadcast(&t.done);
  pthread_mutex_unlock(&t.lock);
}

/* Waits until `n` callbacks ran since the last reset; how many succeeded. */
static int wait_for(int n) {
  pthread_mutex_lock(&t.lock);
  while (t.completed < n) pthread_cond_wait(&t.done, &t.lock);
  int ok = t.ok;
  t.completed = t.ok = 0;
  pthread_mutex_unlock(&t.lock);
  return ok;
}

/* Records a callback's result where private1 points; counts it. */
static int recorded;
static void record(kvs_postprocess_context *ctx) {
  pthread_mutex_lock(&t.lock);
  *(int *)ctx->private1 = (int)ctx->result;
  recorded++;
  pthread_cond_broadcast(&t.done);
  pthread_mutex_unlock(&t.lock);
}

/* Waits until `n` records; true (and resets). */
static int wait_records(int n) {
  pthread_mutex_lock(&t.lock);
  while (recorded < n) pthread_cond_wait(&t.done, &t.lock);
  recorded = 0;
  pthread_mutex_unlock(&t.lock);
  return 1;
}

#define CTX(op) (void *)&marker, (void *)(intptr_t)(op)

void suite_async(kvs_key_space_handle ks) {
  static char keys[N][16], values[N][16], outs[N][16];
  static kvs_key k[N];
  static kvs_value v[N], out[N];
  kvs_option_store post = {KVS_STORE_POST, NULL};
  kvs_option_retrieve keep = {false};
  kvs_option_delete lax = {false};
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], 16, "async-%03d", i);
    snprintf(values[i], 16, "value-%03d", i);
    k[i] = key_of(keys[i]);
    v[i].value = values[i];
    v[i].length = (uint32_t)strlen(values[i]);
    v[i].actual_value_size = v[i].offset = 0;
    out[i].value = outs[i];
    out[i].length = 16;
    out[i].actual_value_size = out[i].offset = 0;
  }
  int queued = 0;
  for (int i = 0; i < N; i++)
    queued += kvs_store_kvp_async(ks, &k[i], &v[i], &post, CTX(KVS_CMD_STORE), on_done) == 0;
  CHECK(queued == N && wait_for(N) == N, "64 async stores, each called back");

  queued = 0;
  for (int i = 0; i < N; i++)
    queued += kvs_retrieve_kvp_async(ks, &k[i], &keep, CTX(KVS_CMD_RETRIEVE), &out[i],
                                     on_done) == 0;
  CHECK(queued == N && wait_for(N) == N, "64 async retrieves");
  int same = 0;
  for (int i = 0; i < N; i++)
    same += out[i].length == v[i].length && memcmp(outs[i], values[i], v[i].length) == 0;
  CHECK(same == N, "async retrieves read what was stored");

  uint8_t bits[N / 8];
  kvs_exist_list list = {N, k, sizeof bits, bits};
  EXPECT(kvs_exist_kv_pairs_async(ks, N, k, &list, CTX(KVS_CMD_EXIST), on_done), KVS_SUCCESS,
         "async exist");
  CHECK(wait_for(1) == 1 && bits[0] == 0xff && bits[N / 8 - 1] == 0xff, "all 64 exist");

  for (int i = 0; i < N / 2; i++)
    kvs_delete_kvp_async(ks, &k[i], &lax, CTX(KVS_CMD_DELETE), on_done);
  CHECK(wait_for(N / 2) == N / 2, "32 async deletes");
  kvs_key_group_filter all_async = {{0xff, 0xff, 0xff, 0xff}, {'a', 's', 'y', 'n'}};
  EXPECT(kvs_delete_key_group_async(ks, &all_async, CTX(KVS_CMD_DELETE_GROUP), on_done),
         KVS_SUCCESS, "async group delete");
  CHECK(wait_for(1) == 1, "group delete called back");

  kvs_option_iterator keys_only = {KVS_ITERATOR_KEY};
  kvs_key_group_filter aa = {{0xff, 0xff, 0, 0}, {'a', 'a', 0, 0}};
  kvs_iterator_handle it;
  EXPECT(kvs_create_iterator(ks, &keys_only, &aa, &it), KVS_SUCCESS, "iterator for async");
  uint8_t buf[4096];
  kvs_iterator_list il = {0, false, sizeof buf, buf};
  EXPECT(kvs_iterate_next_async(ks, it, &il, CTX(KVS_CMD_ITER_NEXT), on_done), KVS_SUCCESS,
         "async iterate");
  CHECK(wait_for(1) == 1 && il.num_entries == 20 && il.end, "async iterate: 20 aa keys, end");
  kvs_delete_iterator(ks, it);

  EXPECT(kvs_exist_kv_pairs_async(ks, N, k, &list, CTX(KVS_CMD_EXIST), on_done), KVS_SUCCESS,
         "async exist after deletes");
  CHECK(wait_for(1) == 1 && bits[0] == 0 && bits[N / 8 - 1] == 0, "none left");

  /* Calls queued together each get their own answer: a bad key and a no-overwrite store
   * among plain stores, a missing key among retrieves. */
  static int codes[8];
  static kvs_key mixed[8];
  static char mixed_keys[8][16];
  kvs_option_store create = {KVS_STORE_NOOVERWRITE, NULL};
  for (int i = 0; i < 8; i++) {
    snprintf(mixed_keys[i], 16, "mixed-%d", i);
    mixed[i] = key_of(mixed_keys[i]);
  }
  mixed[3].length = 0;
  put(ks, "mixed-5", "there");
  for (int i = 0; i < 8; i++)
    kvs_store_kvp_async(ks, &mixed[i], &v[i], i == 5 ? &create : &post, &codes[i],
                        (void *)(intptr_t)KVS_CMD_STORE, record);
  CHECK(wait_records(8), "8 mixed stores called back");
  int right = 0;
  for (int i = 0; i < 8; i++)
    right += codes[i] == (i == 3   ? KVS_ERR_KEY_LENGTH_INVALID
                          : i == 5 ? KVS_ERR_VALUE_UPDATE_NOT_ALLOWED
                                   : KVS_SUCCESS);
  CHECK(right == 8, "each store of the batch has its own result");
  mixed[3].length = 7;
  kvs_delete_kvp(ks, &mixed[6], NULL);
  for (int i = 0; i < 8; i++) {
    out[i].length = 16;
    kvs_retrieve_kvp_async(ks, &mixed[i], &keep, &codes[i], (void *)(intptr_t)KVS_CMD_RETRIEVE,
                           &out[i], record);
  }
  CHECK(wait_records(8), "8 mixed retrieves called back");
  right = 0;
  for (int i = 0; i < 8; i++)
    right += codes[i] == (i == 3 || i == 6 ? KVS_ERR_KEY_NOT_EXIST : KVS_SUCCESS);
  CHECK(right == 8, "each retrieve of the batch has its own result");
  CHECK(out[0].length == v[0].length && memcmp(outs[0], values[0], v[0].length) == 0 &&
            out[5].length == 5 && memcmp(outs[5], "there", 5) == 0,
        "batched retrieves read their own values");

  /* Errors come back in the callback: a missing key. */
  kvs_key missing = key_of("async-missing");
  EXPECT(kvs_retrieve_kvp_async(ks, &missing, &keep, CTX(KVS_CMD_RETRIEVE), &out[0], on_done),
         KVS_SUCCESS, "async retrieve of a missing key queued");
  CHECK(wait_for(1) == 0, "its callback has the error");
  EXPECT(kvs_store_kvp_async((kvs_key_space_handle)0x99, &k[0], &v[0], &post,
                             CTX(KVS_CMD_STORE), on_done),
         KVS_ERR_KS_NOT_OPEN, "async on a forged key space");
  pthread_mutex_lock(&t.lock);
  CHECK(t.bad_ctx == 0, "every context named its call and private data");
  pthread_mutex_unlock(&t.lock);
}

/* Several threads on one key space handle at once (each on its own connection). */
struct worker {
  kvs_key_space_handle ks;
  int id, ok;
};

static void *work(void *arg) {
  struct worker *w = (struct worker *)arg;
  for (int i = 0; i < 50; i++) {
    char key[32], value[32], got[32];
    snprintf(key, sizeof key, "thread-%d-%02d", w->id, i);
    snprintf(value, sizeof value, "value-%d-%02d", w->id, i);
    kvs_key k = key_of(key);
    kvs_value v = {value, (uint32_t)strlen(value), 0, 0};
    kvs_value out = {got, sizeof got, 0, 0};
    if (kvs_store_kvp(w->ks, &k, &v, NULL) != KVS_SUCCESS) continue;
    if (kvs_retrieve_kvp(w->ks, &k, NULL, &out) != KVS_SUCCESS) continue;
    w->ok += out.length == v.length && memcmp(got, value, v.length) == 0;
  }
  return NULL;
}

void suite_threads(kvs_key_space_handle ks) {
  pthread_t tid[8];
  struct worker w[8];
  for (int i = 0; i < 8; i++) {
    w[i].ks = ks;
    w[i].id = i;
    w[i].ok = 0;
    pthread_create(&tid[i], NULL, work, &w[i]);
  }
  int ok = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(tid[i], NULL);
    ok += w[i].ok;
  }
  CHECK(ok == 8 * 50, "8 threads, 50 stores and retrieves each, on one handle");
}
