/* The C suite's parts, each driving a group of the API's calls. */
#ifndef KVS_SUITE_H
#define KVS_SUITE_H

#include "kvs_api.h"
#include "check.h"

/* A key from a string (its bytes without the NUL). */
kvs_key key_of(const char *s);
/* A key space name from a string. */
kvs_key_space_name name_of(const char *s);
/* Stores `value` under `key`, checked. */
void put(kvs_key_space_handle ks, const char *key, const char *value);

void suite_device(kvs_device_handle dev);
void suite_key_spaces(kvs_device_handle dev);
void suite_kvp(kvs_key_space_handle ks, kvs_device_handle dev);
void suite_iterators(kvs_key_space_handle ks);
void suite_async(kvs_key_space_handle ks);
void suite_threads(kvs_key_space_handle ks);
void suite_tenant(const char *uri);
void suite_memory(void);

#endif
