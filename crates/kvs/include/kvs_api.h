/* Cerberus KVS library: the SNIA Key Value Storage API (v1.0) in C, over a Cerberus device
 * reached on the network (the native wire or NVMe/TCP). The declarations follow the Samsung
 * KV-SSD kit's v1.6.0 headers, so programs written for the kit compile against these and
 * link with -lcerberus_kvs unchanged. docs/kvs-api.md says how URIs, credentials and key
 * spaces map onto the device.
 *
 * Every call returns a kvs_result; none crashes on NULL pointers or bad lengths (it returns
 * KVS_ERR_PARAM_INVALID or the length error instead). The _async calls queue the work on
 * the library's threads and return at once; the callback runs on one of those threads. */
#ifndef KVS_API_H
#define KVS_API_H

#include <memory.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_const.h"
#include "kvs_result.h"
#include "kvs_struct.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Memory: aligned buffers (plain posix_memalign; `file` names the caller's line). ---- */
void *_kvs_zalloc(size_t size_bytes, size_t alignment, const char *file);
void *_kvs_malloc(size_t size_bytes, size_t alignment, const char *file);
void _kvs_free(void *buf, const char *file);
/* Prints what the kvs_malloc family has outstanding, to stderr. */
void _kvs_report_memstat(void);

#define _FUNCTIONIZE(a, b) a(b)
#define _STRINGIZE(a) #a
#define _INT2STRING(i) _FUNCTIONIZE(_STRINGIZE, i)
#define _LOCATION __FILE__ ":" _INT2STRING(__LINE__)

#define kvs_malloc(size, alignment) _kvs_malloc(size, alignment, _LOCATION)
#define kvs_zalloc(size, alignment) _kvs_zalloc(size, alignment, _LOCATION)
#define kvs_free(buf) _kvs_free(buf, _LOCATION)
#define kvs_memstat() _kvs_report_memstat()

/* ---- The device. ---- */

/* Connects to the device at URI: "host:port", "cerberus://host:port" (native wire) or
 * "nvme-tcp://host:port?hostnqn=...&subnqn=..." (NVMe/TCP); credentials come from the
 * environment (docs/kvs-api.md). */
kvs_result kvs_open_device(char *URI, kvs_device_handle *dev_hd);
/* Waits for the handle's outstanding async calls, then disconnects. */
kvs_result kvs_close_device(kvs_device_handle dev_hd);
kvs_result kvs_get_device_info(kvs_device_handle dev_hd, kvs_device *dev_info);
/* The summed quotas of the key spaces the handle sees (0: none has a quota). */
kvs_result kvs_get_device_capacity(kvs_device_handle dev_hd, uint64_t *dev_capacity);
/* Bytes used against those quotas, in hundredths of a percent (0 to 10000). */
kvs_result kvs_get_device_utilization(kvs_device_handle dev_hd, uint32_t *dev_utilization);
kvs_result kvs_get_min_key_length(kvs_device_handle dev_hd, uint32_t *min_key_length);
kvs_result kvs_get_max_key_length(kvs_device_handle dev_hd, uint32_t *max_key_length);
kvs_result kvs_get_min_value_length(kvs_device_handle dev_hd, uint32_t *min_value_length);
kvs_result kvs_get_max_value_length(kvs_device_handle dev_hd, uint32_t *max_value_length);
kvs_result kvs_get_optimal_value_length(kvs_device_handle dev_hd, uint32_t *opt_value_length);

/* ---- Key spaces (device namespaces of the same name). ---- */

/* Needs the admin credential; size > 0 becomes the namespace's capacity quota. */
kvs_result kvs_create_key_space(kvs_device_handle dev_hd, kvs_key_space_name *key_space_name,
                                uint64_t size, kvs_option_key_space opt);
kvs_result kvs_delete_key_space(kvs_device_handle dev_hd, kvs_key_space_name *key_space_name);
/* index counts from 1; buffer_size is in bytes (a multiple of sizeof(kvs_key_space_name)). */
kvs_result kvs_list_key_spaces(kvs_device_handle dev_hd, uint32_t index, uint32_t buffer_size,
                               kvs_key_space_name *names, uint32_t *ks_cnt);
kvs_result kvs_open_key_space(kvs_device_handle dev_hd, char *name, kvs_key_space_handle *ks_hd);
kvs_result kvs_close_key_space(kvs_key_space_handle ks_hd);
kvs_result kvs_get_key_space_info(kvs_key_space_handle ks_hd, kvs_key_space *ks);

/* ---- Key-value pairs. ---- */

kvs_result kvs_get_kvp_info(kvs_key_space_handle ks_hd, kvs_key *key, kvs_kvp_info *info);
/* A buffer smaller than the value gets its first value->length bytes, actual_value_size the
 * whole size, and the call KVS_ERR_BUFFER_SMALL. */
kvs_result kvs_retrieve_kvp(kvs_key_space_handle ks_hd, kvs_key *key, kvs_option_retrieve *opt,
                            kvs_value *value);
kvs_result kvs_retrieve_kvp_async(kvs_key_space_handle ks_hd, kvs_key *key,
                                  kvs_option_retrieve *opt, void *private1, void *private2,
                                  kvs_value *value, kvs_postprocess_function post_fn);
kvs_result kvs_store_kvp(kvs_key_space_handle ks_hd, kvs_key *key, kvs_value *value,
                         kvs_option_store *opt);
kvs_result kvs_store_kvp_async(kvs_key_space_handle ks_hd, kvs_key *key, kvs_value *value,
                               kvs_option_store *opt, void *private1, void *private2,
                               kvs_postprocess_function post_fn);
kvs_result kvs_delete_kvp(kvs_key_space_handle ks_hd, kvs_key *key, kvs_option_delete *opt);
kvs_result kvs_delete_kvp_async(kvs_key_space_handle ks_hd, kvs_key *key, kvs_option_delete *opt,
                                void *private1, void *private2, kvs_postprocess_function post_fn);
/* Deletes every pair of the key group. */
kvs_result kvs_delete_key_group(kvs_key_space_handle ks_hd, kvs_key_group_filter *grp_fltr);
kvs_result kvs_delete_key_group_async(kvs_key_space_handle ks_hd, kvs_key_group_filter *grp_fltr,
                                      void *private1, void *private2,
                                      kvs_postprocess_function post_fn);
kvs_result kvs_exist_kv_pairs(kvs_key_space_handle ks_hd, uint32_t key_cnt, kvs_key *keys,
                              kvs_exist_list *list);
kvs_result kvs_exist_kv_pairs_async(kvs_key_space_handle ks_hd, uint32_t key_cnt, kvs_key *keys,
                                    kvs_exist_list *list, void *private1, void *private2,
                                    kvs_postprocess_function post_fn);

/* ---- Iterators over a key group. ---- */

kvs_result kvs_create_iterator(kvs_key_space_handle ks_hd, kvs_option_iterator *iter_op,
                               kvs_key_group_filter *iter_fltr, kvs_iterator_handle *iter_hd);
kvs_result kvs_delete_iterator(kvs_key_space_handle ks_hd, kvs_iterator_handle iter_hd);
/* Fills iter_list->it_list with whole entries (layout: kvs_struct.h); end says whether any
 * remain. An entry larger than the whole buffer is KVS_ERR_BUFFER_SMALL. */
kvs_result kvs_iterate_next(kvs_key_space_handle ks_hd, kvs_iterator_handle iter_hd,
                            kvs_iterator_list *iter_list);
kvs_result kvs_iterate_next_async(kvs_key_space_handle ks_hd, kvs_iterator_handle iter_hd,
                                  kvs_iterator_list *iter_list, void *private1, void *private2,
                                  kvs_postprocess_function post_fn);

#ifdef __cplusplus
}
#endif

#endif
