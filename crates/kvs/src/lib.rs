//! The SNIA Key Value Storage API (v1.0) in C, as the Samsung KV-SSD kit's `kvs_api.h`
//! declares it, over a Cerberus device on the network: `libcerberus_kvs.so` and the
//! headers in `include/`. Programs written for the kit compile and link unchanged; a key
//! space is a device namespace (docs/kvs-api.md).

mod async_batch;
mod completion;
mod credentials;
mod device;
mod edge;
mod ffi_async;
mod ffi_device;
mod ffi_iterator;
mod ffi_key_space;
mod ffi_kvp;
mod ffi_memory;
mod ffi_types;
mod handles;
mod iterator;
mod iterator_slots;
mod job_queue;
mod key_group;
mod key_space;
mod key_spaces;
mod live;
mod locks;
mod ops;
mod pending;
mod result;
mod secrets;
mod uri;

pub use ffi_async::{
    kvs_delete_key_group_async, kvs_delete_kvp_async, kvs_exist_kv_pairs_async,
    kvs_iterate_next_async, kvs_retrieve_kvp_async, kvs_store_kvp_async,
};
pub use ffi_device::{
    kvs_close_device, kvs_get_device_capacity, kvs_get_device_info, kvs_get_device_utilization,
    kvs_get_max_key_length, kvs_get_max_value_length, kvs_get_min_key_length,
    kvs_get_min_value_length, kvs_get_optimal_value_length, kvs_open_device, kvs_open_device_with,
};
pub use ffi_iterator::{kvs_create_iterator, kvs_delete_iterator, kvs_iterate_next};
pub use ffi_key_space::{
    kvs_close_key_space, kvs_create_key_space, kvs_delete_key_space, kvs_get_key_space_info,
    kvs_list_key_spaces, kvs_open_key_space,
};
pub use ffi_kvp::{
    kvs_delete_key_group, kvs_delete_kvp, kvs_exist_kv_pairs, kvs_get_kvp_info, kvs_retrieve_kvp,
    kvs_store_kvp,
};
pub use ffi_memory::{_kvs_free, _kvs_malloc, _kvs_report_memstat, _kvs_zalloc};
pub use ffi_types::PostFn;
pub use ffi_types::{
    KvsDevice, KvsExistList, KvsIteratorList, KvsKey, KvsKeyGroupFilter, KvsKeySpace,
    KvsKeySpaceName, KvsKvpInfo, KvsOptionDelete, KvsOptionIterator, KvsOptionKeySpace,
    KvsOptionRetrieve, KvsOptionStore, KvsPostprocessContext, KvsResult, KvsValue,
};
pub use result::code;
pub use secrets::device_dir as secrets_dir;
