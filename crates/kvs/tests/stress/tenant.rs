//! The second tenant: a device handle opened with `CERBERUS_NS`/`CERBERUS_SECRET` of the
//! `tenant` key space (through the env function, not the process environment). It sees only
//! its own key space, and a worker on it drawing the same keys as worker 0 keeps a model of
//! its own: the two never see or change each other's pairs.

use crate::device::{open_key_space, MAIN, TENANT, TENANT_QUOTA};
use crate::ffi::{self, ptr, H};
use crate::worker::expect;
use cerberus_kvs::{code, kvs_list_key_spaces, KvsKeySpaceName};

/// Checks what the tenant's handle `tdev` sees; its key space's handle.
pub fn open_as_tenant(tdev: H) -> Result<H, String> {
    match open_key_space(tdev, MAIN) {
        Err(c) => expect(
            "the tenant opening the main key space",
            c,
            code::KS_NOT_EXIST,
        )?,
        Ok(_) => return Err("the tenant's handle opened the main key space".into()),
    }
    let names = list(tdev)?;
    if names != [TENANT] {
        return Err(format!("the tenant's handle lists {names:?}"));
    }
    let (c, cap) = ffi::capacity(tdev);
    expect("the tenant's capacity", c, code::SUCCESS)?;
    if cap != TENANT_QUOTA {
        return Err(format!(
            "the tenant's capacity {cap}, its quota {TENANT_QUOTA}"
        ));
    }
    open_key_space(tdev, TENANT).map_err(|c| format!("the tenant opening its own: {c:#x}"))
}

/// The names `dev` lists.
pub fn list(dev: H) -> Result<Vec<String>, String> {
    let mut bufs = vec![[0u8; 256]; 8];
    let mut names: Vec<KvsKeySpaceName> = bufs
        .iter_mut()
        .map(|b| KvsKeySpaceName {
            name_len: b.len() as u32,
            name: b.as_mut_ptr().cast(),
        })
        .collect();
    let mut count = 0u32;
    let size = std::mem::size_of_val(names.as_slice()) as u32;
    // SAFETY: `size` bytes of names, each with its buffer.
    let r = unsafe { kvs_list_key_spaces(ptr(dev), 1, size, names.as_mut_ptr(), &mut count) };
    expect("list key spaces", r, code::SUCCESS)?;
    let out = names
        .iter()
        .take(count as usize)
        .map(|n| {
            // SAFETY: the library wrote `name_len` bytes of the buffer.
            let bytes =
                unsafe { std::slice::from_raw_parts(n.name.cast::<u8>(), n.name_len as usize) };
            String::from_utf8_lossy(bytes).to_string()
        })
        .collect();
    Ok(out)
}
