//! Logging into the host's log, prefixed there with the plugin's name.
//! Use the macros [`trace!`](crate::trace), [`debug!`](crate::debug),
//! [`info!`](crate::info), [`warn!`](crate::warn), [`error!`](crate::error).

pub use crate::bindings::wink::plugin::types::Level;

/// Write one line to the host's log.
pub fn log(level: Level, message: &str) {
    crate::bindings::wink::plugin::log::log(level, message)
}

#[doc(hidden)]
#[macro_export]
macro_rules! __log {
    ($level:ident, $($arg:tt)*) => {
        $crate::log::log($crate::log::Level::$level, &::std::format!($($arg)*))
    };
}

/// Log at trace level, `format!` syntax.
#[macro_export]
macro_rules! trace { ($($arg:tt)*) => { $crate::__log!(Trace, $($arg)*) }; }
/// Log at debug level, `format!` syntax.
#[macro_export]
macro_rules! debug { ($($arg:tt)*) => { $crate::__log!(Debug, $($arg)*) }; }
/// Log at info level, `format!` syntax.
#[macro_export]
macro_rules! info { ($($arg:tt)*) => { $crate::__log!(Info, $($arg)*) }; }
/// Log at warn level, `format!` syntax.
#[macro_export]
macro_rules! warn { ($($arg:tt)*) => { $crate::__log!(Warn, $($arg)*) }; }
/// Log at error level, `format!` syntax.
#[macro_export]
macro_rules! error { ($($arg:tt)*) => { $crate::__log!(Error, $($arg)*) }; }
