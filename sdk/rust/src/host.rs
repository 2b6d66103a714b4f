//! Reef Rust SDK: the imports of module "reef" (docs/abi.md), behind safe slice signatures.
//!
//! On wasm32 these call the host. On any other target (`cargo test` on the build machine)
//! they call the test double in [`crate::testing`], which checks its arguments like the host
//! does, so the SDK's encoding and protocol loops are tested natively. Every function here is
//! a thin shim: return codes are interpreted by the callers (actor.rs, services.rs).

#[cfg(target_arch = "wasm32")]
mod raw {
    // The wasm import names are the item names (`self` through link_name). rustc gives
    // imports with a wasm_import_module crate-local symbols, so `log` cannot clash with
    // libm's `log` in the link.
    #[link(wasm_import_module = "reef")]
    extern "C" {
        pub fn send(
            target_ptr: *const u8,
            target_len: usize,
            msg_ptr: *const u8,
            msg_len: usize,
        ) -> i32;
        pub fn send_from(
            sender_ptr: *const u8,
            sender_len: usize,
            target_ptr: *const u8,
            target_len: usize,
            msg_ptr: *const u8,
            msg_len: usize,
        ) -> i32;
        pub fn call(
            target_ptr: *const u8,
            target_len: usize,
            msg_ptr: *const u8,
            msg_len: usize,
            timeout_ms: i32,
        ) -> i32;
        pub fn call_reply(buf_ptr: *mut u8, buf_cap: usize) -> i32;
        pub fn log(level: i32, msg_ptr: *const u8, msg_len: usize) -> i32;
        #[link_name = "self"]
        pub fn self_(buf_ptr: *mut u8, buf_cap: usize) -> i32;
        pub fn fail(msg_ptr: *const u8, msg_len: usize) -> !;
        pub fn now_ms() -> i64;
        pub fn random(buf_ptr: *mut u8, len: usize) -> i32;
        pub fn env(key_ptr: *const u8, key_len: usize, out_ptr: *mut u8, out_cap: usize) -> i32;
        pub fn sql_exec(
            sql_ptr: *const u8,
            sql_len: usize,
            params_ptr: *const u8,
            params_len: usize,
        ) -> i64;
        pub fn sql_query(
            sql_ptr: *const u8,
            sql_len: usize,
            params_ptr: *const u8,
            params_len: usize,
            out_ptr: *mut u8,
            out_cap: usize,
        ) -> i32;
        pub fn append(events_ptr: *const u8, events_len: usize) -> i64;
    }
}

#[cfg(not(target_arch = "wasm32"))]
use crate::testing::double as raw;

// The raw functions take (ptr, len) pairs of slices the callers own for the whole call; the
// host never keeps a pointer after the call returns.

pub(crate) fn send(target: &[u8], msg: &[u8]) -> i32 {
    unsafe { raw::send(target.as_ptr(), target.len(), msg.as_ptr(), msg.len()) }
}

pub(crate) fn send_from(sender: &[u8], target: &[u8], msg: &[u8]) -> i32 {
    unsafe {
        raw::send_from(
            sender.as_ptr(),
            sender.len(),
            target.as_ptr(),
            target.len(),
            msg.as_ptr(),
            msg.len(),
        )
    }
}

pub(crate) fn call(target: &[u8], msg: &[u8], timeout_ms: i32) -> i32 {
    unsafe { raw::call(target.as_ptr(), target.len(), msg.as_ptr(), msg.len(), timeout_ms) }
}

pub(crate) fn call_reply(buf: &mut [u8]) -> i32 {
    unsafe { raw::call_reply(buf.as_mut_ptr(), buf.len()) }
}

pub(crate) fn log(level: i32, msg: &[u8]) -> i32 {
    unsafe { raw::log(level, msg.as_ptr(), msg.len()) }
}

pub(crate) fn self_ref(buf: &mut [u8]) -> i32 {
    unsafe { raw::self_(buf.as_mut_ptr(), buf.len()) }
}

pub(crate) fn fail(msg: &[u8]) -> ! {
    unsafe { raw::fail(msg.as_ptr(), msg.len()) }
}

pub(crate) fn now_ms() -> i64 {
    unsafe { raw::now_ms() }
}

pub(crate) fn random(buf: &mut [u8]) -> i32 {
    unsafe { raw::random(buf.as_mut_ptr(), buf.len()) }
}

pub(crate) fn env(key: &[u8], out: &mut [u8]) -> i32 {
    unsafe { raw::env(key.as_ptr(), key.len(), out.as_mut_ptr(), out.len()) }
}

pub(crate) fn sql_exec(sql: &[u8], params: &[u8]) -> i64 {
    unsafe { raw::sql_exec(sql.as_ptr(), sql.len(), params.as_ptr(), params.len()) }
}

pub(crate) fn sql_query(sql: &[u8], params: &[u8], out: &mut [u8]) -> i32 {
    unsafe {
        raw::sql_query(
            sql.as_ptr(),
            sql.len(),
            params.as_ptr(),
            params.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    }
}

pub(crate) fn append(events: &[u8]) -> i64 {
    unsafe { raw::append(events.as_ptr(), events.len()) }
}
