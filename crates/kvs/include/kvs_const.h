/* Cerberus KVS library: constants of the SNIA Key Value Storage API, with the kit's names.
 * The device's own limits (kvs_get_max_key_length, ...) may be tighter or looser than these
 * nominal ones; the library checks against the device's. */
#ifndef KVS_CONST_H
#define KVS_CONST_H

#ifdef __cplusplus
extern "C" {
#endif

#define KVS_MIN_KEY_LENGTH 4
#define KVS_MAX_KEY_LENGTH 255
#define KVS_MIN_VALUE_LENGTH 0
#define KVS_MAX_VALUE_LENGTH (2 * 1024 * 1024)
#define KVS_OPTIMAL_VALUE_LENGTH 4096
/* Retrieve offsets are multiples of this (a power of two). */
#define KVS_ALIGNMENT_UNIT 512
#define KVS_VALUE_LENGTH_ALIGNMENT_UNIT 4
/* Iterators a device handle may have open at once. */
#define KVS_MAX_ITERATE_HANDLE 16
#define G_ITER_KEY_SIZE_FIXED 16
/* The key group filter covers this many leading key bytes. */
#define KVS_MAX_KEY_GROUP_BYTES 4
#define KVS_ITERATOR_BUFFER_SIZE (32 * 1024)
#define MAX_CONT_PATH_LEN 255
#define MAX_KEYSPACE_NAME_LEN MAX_CONT_PATH_LEN

#ifdef __cplusplus
}
#endif

#endif
