/* Cerberus KVS library: the data structures of the SNIA Key Value Storage API. Field names,
 * order and types are the kit's v1.6.0 ones (programs built for the kit use them as is). */
#ifndef KVS_STRUCT_H
#define KVS_STRUCT_H

#include <stdbool.h>
#include <stdint.h>

#include "kvs_const.h"
#include "kvs_result.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint8_t major;
  uint8_t minor;
  uint8_t micro;
} kvs_api_version;

/* Which call a completion (kvs_postprocess_context.context) reports. */
typedef enum {
  KVS_CMD_DELETE = 0x01,
  KVS_CMD_DELETE_GROUP = 0x02,
  KVS_CMD_EXIST = 0x03,
  KVS_CMD_ITER_CREATE = 0x04,
  KVS_CMD_ITER_DELETE = 0x05,
  KVS_CMD_ITER_NEXT = 0x06,
  KVS_CMD_RETRIEVE = 0x07,
  KVS_CMD_STORE = 0x08,
} kvs_context;

/* Cerberus key spaces are always ordered by key; every ordering option is accepted. */
typedef enum {
  KVS_KEY_ORDER_NONE = 0,
  KVS_KEY_ORDER_ASCEND = 1,
  KVS_KEY_ORDER_DESCEND = 2,
} kvs_key_order;

typedef struct {
  kvs_key_order ordering;
} kvs_option_key_space;

typedef struct {
  bool kvs_delete_error; /* true: deleting an absent key is KVS_ERR_KEY_NOT_EXIST */
} kvs_option_delete;

typedef enum {
  KVS_ITERATOR_KEY = 0,       /* keys only */
  KVS_ITERATOR_KEY_VALUE = 1, /* keys and their values */
} kvs_iterator_type;

typedef struct {
  kvs_iterator_type iter_type;
} kvs_option_iterator;

typedef struct {
  bool kvs_retrieve_delete; /* delete the pair once read */
} kvs_option_retrieve;

typedef enum {
  KVS_STORE_POST = 0,        /* create or overwrite */
  KVS_STORE_UPDATE_ONLY = 1, /* overwrite only: KVS_ERR_KEY_NOT_EXIST if absent */
  KVS_STORE_NOOVERWRITE = 2, /* create only: KVS_ERR_VALUE_UPDATE_NOT_ALLOWED if present */
  KVS_STORE_APPEND = 3,      /* not supported: KVS_ERR_OPTION_INVALID */
} kvs_store_type;

typedef enum {
  KVS_NOASSOCIATION = 0,
  KVS_ASSOCIATION_STREAM = 1,
} kvs_association_type;

typedef struct {
  void *key;       /* the key's bytes */
  uint16_t length; /* how many */
} kvs_key;

typedef struct {
  void *value;                /* the value's bytes (store) or the buffer to fill (retrieve) */
  uint32_t length;            /* bytes at value; after a retrieve, the bytes copied */
  uint32_t actual_value_size; /* after a retrieve: the whole stored value's size */
  uint32_t offset;            /* retrieve from this byte of the value on */
} kvs_value;

typedef struct {
  kvs_association_type assoc_type;
  uint16_t assoc_hint;
} kvs_association;

typedef struct {
  kvs_store_type st_type;
  kvs_association *assoc; /* ignored */
} kvs_option_store;

struct _kvs_device_handle;
struct _kvs_key_space_handle;
/* Opaque handles: never dereference them. */
typedef struct _kvs_device_handle *kvs_device_handle;
typedef struct _kvs_key_space_handle *kvs_key_space_handle;
typedef uint8_t kvs_iterator_handle;

typedef struct {
  uint32_t name_len; /* in: bytes at name; out: the name's length */
  char *name;
} kvs_key_space_name;

typedef struct {
  bool opened;
  uint64_t capacity;  /* the key space's quota in bytes (0: no quota) */
  uint64_t free_size; /* quota left (0 without a quota) */
  uint64_t count;     /* pairs held (the device's estimate) */
  kvs_key_space_name *name;
} kvs_key_space;

typedef struct {
  uint64_t capacity;
  uint64_t unalloc_capacity;
  uint32_t max_value_len;
  uint32_t max_key_len;
  uint32_t optimal_value_len;
  uint32_t optimal_value_granularity;
  void *extended_info; /* always NULL here */
} kvs_device;

typedef struct {
  uint32_t num_keys;
  kvs_key *keys;
  uint32_t length;         /* bytes at result_buffer */
  uint8_t *result_buffer;  /* one bit per key, LSB of byte 0 first: 1 = exists */
} kvs_exist_list;

/* A key is in the group when (first 4 bytes & bitmask) == (bit_pattern & bitmask), byte by
 * byte; a key shorter than 4 bytes reads as zero past its end. */
typedef struct {
  uint8_t bitmask[KVS_MAX_KEY_GROUP_BYTES];
  uint8_t bit_pattern[KVS_MAX_KEY_GROUP_BYTES];
} kvs_key_group_filter;

/* it_list holds num_entries entries, each a little-endian uint32_t key length and the key,
 * followed (KVS_ITERATOR_KEY_VALUE) by a uint32_t value length and the value. */
typedef struct {
  uint32_t num_entries;
  bool end;          /* true: the iterator has nothing after these entries */
  uint32_t size;     /* in: bytes at it_list; out: bytes filled */
  uint8_t *it_list;
} kvs_iterator_list;

/* What a completion callback receives; it lives until the callback returns. */
typedef struct {
  kvs_context context;
  kvs_key_space_handle ks_hd;
  kvs_key *key;
  kvs_value *value;
  void *option;
  void *private1;
  void *private2;
  kvs_result result;
  kvs_iterator_handle iter_hd;
  union {
    kvs_iterator_list *iter_list;
    kvs_exist_list *list;
  } result_buffer;
} kvs_postprocess_context;

/* Completion callbacks run on the library's threads. */
typedef void (*kvs_postprocess_function)(kvs_postprocess_context *ctx);

typedef struct {
  uint16_t key_len;
  uint8_t *key;       /* a buffer of key_len bytes the key is copied to, or NULL */
  uint32_t value_len;
} kvs_kvp_info;

#ifdef __cplusplus
}
#endif

#endif
