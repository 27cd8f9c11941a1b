//! The A2A 1.0 data model (`lf.a2a.v1` in `a2a.proto`) as serde types.
//!
//! The wire form is the ProtoJSON mapping the specification mandates (section 5.5):
//!
//! * field names are camelCase (`context_id` -> `contextId`);
//! * enums are their proto names (`"TASK_STATE_INPUT_REQUIRED"`, `"ROLE_USER"`); on input
//!   the numeric value is accepted too, as ProtoJSON parsers do, and anything else is
//!   rejected with an error naming the accepted values;
//! * a `oneof` is the member name of the set alternative (`{"text": "hi"}`,
//!   `{"statusUpdate": {...}}`); exactly one member must be present;
//! * `google.protobuf.Timestamp` is an RFC 3339 string in UTC ([`Timestamp`]);
//! * `bytes` are base64 (standard alphabet with padding on output; standard or URL-safe,
//!   padded or not, on input).
//!
//! Input is lenient where ProtoJSON is: a missing field, or `null`, means the field's default,
//! and unknown fields are ignored (spec 5.7, "SHOULD ignore unrecognized fields"). The only
//! field the deserializer itself insists on is `SendMessageRequest.message`: without it there
//! is nothing to validate. All other `REQUIRED` fields are checked by the `validate` methods
//! on the request types, which produce `InvalidParams` errors that name the field. That split
//! keeps every example in the specification parseable (several omit required fields) while the
//! server still rejects incomplete requests with a precise message.
//!
//! Output omits unset optional fields and empty repeated/map fields, as ProtoJSON does, except
//! where the specification wants a field always present (`ListTasksResponse.nextPageToken`,
//! required arrays of the Agent Card) or where a client is better served by an explicit value.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::error::A2aError;

/// The A2A protocol version this server speaks (`Major.Minor`, spec 3.6).
pub const PROTOCOL_VERSION: &str = "1.0";

/// `google.protobuf.Struct`: a JSON object. Used for every `metadata` field and for
/// `AgentExtension.params`. An empty map is omitted on output.
pub type Metadata = serde_json::Map<String, Value>;

// ---------------------------------------------------------------------------------------------
// Serde helpers
// ---------------------------------------------------------------------------------------------

/// ProtoJSON treats `null` like an absent field: the field takes its default value.
/// Used on every non-`Option` field that has a default (strings, lists, maps, bools, enums).
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// An optional `int32`. ProtoJSON accepts a JSON number or a string holding a decimal integer
/// (and REST query parameters arrive as strings), so both are accepted; fractions and values
/// outside the `i32` range are errors.
fn optional_i32<'de, D>(deserializer: D) -> Result<Option<i32>, D::Error>
where
    D: Deserializer<'de>,
{
    struct Int32;

    impl<'de> Visitor<'de> for Int32 {
        type Value = Option<i32>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a 32-bit integer")
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            i32::try_from(v)
                .map(Some)
                .map_err(|_| E::custom(format!("{v} is out of range for a 32-bit integer")))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            i32::try_from(v)
                .map(Some)
                .map_err(|_| E::custom(format!("{v} is out of range for a 32-bit integer")))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            if v.fract() == 0.0 && v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX) {
                // Exact: the value is integral and within range.
                Ok(Some(v as i32))
            } else {
                Err(E::custom(format!("{v} is not a 32-bit integer")))
            }
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            v.trim()
                .parse::<i32>()
                .map(Some)
                .map_err(|_| E::custom(format!("\"{v}\" is not a 32-bit integer")))
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
    }

    deserializer.deserialize_any(Int32)
}

/// Deserializes a present field as `Some`, even when its value is JSON `null`. Used for
/// `Part.data`, whose type (`google.protobuf.Value`) makes `null` a real value rather than
/// "unset".
fn present<'de, D>(deserializer: D) -> Result<Option<Value>, D::Error>
where
    D: Deserializer<'de>,
{
    Value::deserialize(deserializer).map(Some)
}

/// Builds the `InvalidParams` error the `validate` methods return.
fn invalid(field: &str, message: impl Into<String>) -> A2aError {
    A2aError::InvalidParams {
        message: message.into(),
        field: Some(field.to_owned()),
    }
}

fn require_non_empty(field: &str, value: &str) -> Result<(), A2aError> {
    if value.is_empty() {
        Err(invalid(field, format!("{field} is required")))
    } else {
        Ok(())
    }
}

fn require_non_negative(field: &str, value: Option<i32>) -> Result<(), A2aError> {
    match value {
        Some(v) if v < 0 => Err(invalid(
            field,
            format!("{field} must be a non-negative integer, got {v}"),
        )),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------------------------

/// An enum value that is not one of the names (or numbers) the proto defines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {enum_name} value {value}; expected one of {expected}")]
pub struct UnknownEnumValue {
    /// The proto enum's name, e.g. `TaskState`.
    pub enum_name: &'static str,
    /// The rejected value as it appeared on the wire (quoted when it was a string).
    pub value: String,
    /// The accepted names, comma-separated.
    pub expected: String,
}

/// Declares a proto enum: its variants with their proto numbers and names, `as_str`,
/// `FromStr`, `Display`, and the ProtoJSON serde form (name on output; name or number on
/// input; anything else an [`UnknownEnumValue`] error).
macro_rules! proto_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $number:literal => $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in proto order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )+ ];

            /// The proto name, which is also the JSON form.
            pub const fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $wire, )+ }
            }

            /// The proto enum number.
            pub const fn number(self) -> i32 {
                match self { $( $name::$variant => $number, )+ }
            }

            /// The value with this proto enum number, if there is one.
            pub fn from_number(number: i64) -> Option<Self> {
                match number { $( $number => Some($name::$variant), )+ _ => None }
            }

            fn unknown(value: String) -> UnknownEnumValue {
                UnknownEnumValue {
                    enum_name: stringify!($name),
                    value,
                    expected: [$( $wire ),+].join(", "),
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownEnumValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $wire => Ok($name::$variant), )+
                    other => Err(Self::unknown(format!("\"{other}\""))),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct EnumVisitor;

                impl Visitor<'_> for EnumVisitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} name such as \"{}\"", stringify!($name), $name::ALL[1].as_str())
                    }

                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        v.parse().map_err(E::custom)
                    }

                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        $name::from_number(v).ok_or_else(|| E::custom($name::unknown(v.to_string())))
                    }

                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        i64::try_from(v)
                            .ok()
                            .and_then($name::from_number)
                            .ok_or_else(|| E::custom($name::unknown(v.to_string())))
                    }
                }

                deserializer.deserialize_any(EnumVisitor)
            }
        }
    };
}

proto_enum! {
    /// The lifecycle state of a [`Task`] (`TaskState`). The set is closed: extensions add
    /// meaning through metadata, never new values (see decision 007).
    pub enum TaskState {
        /// Unknown or indeterminate. Never a valid state for a task this server reports.
        #[default]
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        /// Submitted and acknowledged.
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        /// Being processed by the agent.
        Working = 2 => "TASK_STATE_WORKING",
        /// Finished successfully. Terminal.
        Completed = 3 => "TASK_STATE_COMPLETED",
        /// Finished with an error. Terminal.
        Failed = 4 => "TASK_STATE_FAILED",
        /// Canceled before completion. Terminal.
        Canceled = 5 => "TASK_STATE_CANCELED",
        /// The agent needs more input from the client. Interrupted.
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        /// The agent decided not to perform the task. Terminal.
        Rejected = 7 => "TASK_STATE_REJECTED",
        /// Authentication is required to proceed. Interrupted.
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
}

impl TaskState {
    /// Completed, failed, canceled or rejected: the task accepts no further messages, cannot
    /// be canceled, and cannot be subscribed to.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input-required or auth-required: the agent is waiting on the client.
    pub const fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Terminal or interrupted: the end of a turn. A blocking `SendMessage` returns here and a
    /// stream closes here (the project resolves the spec's stream-closing contradiction this
    /// way, see the reference README).
    pub const fn ends_turn(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

proto_enum! {
    /// Who sent a [`Message`] (`Role`).
    pub enum Role {
        /// Unspecified. Rejected on messages a client sends.
        #[default]
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        /// From the client to the server.
        User = 1 => "ROLE_USER",
        /// From the server to the client.
        Agent = 2 => "ROLE_AGENT",
    }
}

// ---------------------------------------------------------------------------------------------
// Timestamp
// ---------------------------------------------------------------------------------------------

/// `google.protobuf.Timestamp`: an instant in UTC, written as RFC 3339 with a `Z` suffix.
///
/// Output follows the ProtoJSON encoder every official SDK uses: no fraction when the
/// nanoseconds are zero, otherwise 3, 6 or 9 digits, whichever is exact. [`Timestamp::now`]
/// has millisecond precision, so the server's own timestamps read `2025-10-28T10:30:00.142Z`
/// (spec 5.6.1). Input accepts any RFC 3339 date-time from year 1 to 9999 with up to 9
/// fractional digits; a numeric offset is converted to UTC (the spec forbids sending one, but
/// refusing a correct instant would help nobody).
///
/// Ordering is chronological, which `ListTasks` needs for sorting and for
/// `statusTimestampAfter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    seconds: i64,
    nanos: u32,
}

/// Seconds from the Unix epoch to 0001-01-01T00:00:00Z and to 10000-01-01T00:00:00Z: the
/// range ProtoJSON allows.
const MIN_SECONDS: i64 = -62_135_596_800;
const MAX_SECONDS_EXCLUSIVE: i64 = 253_402_300_800;

/// A string that is not an RFC 3339 date-time in the supported range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid timestamp \"{input}\": {reason} (expected RFC 3339, e.g. 2025-10-28T10:30:00.000Z)"
)]
pub struct InvalidTimestamp {
    input: String,
    reason: &'static str,
}

impl Timestamp {
    /// The current time, truncated to milliseconds.
    pub fn now() -> Self {
        Self::from_system_time(SystemTime::now())
    }

    /// Converts a `SystemTime`, truncated to milliseconds.
    pub fn from_system_time(time: SystemTime) -> Self {
        let millis = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
            Err(before) => {
                let before = before.duration();
                // Round towards the past so that truncation stays monotonic.
                let ms = i64::try_from(before.as_millis()).unwrap_or(i64::MAX);
                let extra = i64::from(before.subsec_nanos() % 1_000_000 != 0);
                -(ms.saturating_add(extra))
            }
        };
        Self::from_unix_millis(millis)
    }

    /// The instant `millis` milliseconds after the Unix epoch, clamped to the range ProtoJSON
    /// can represent.
    pub fn from_unix_millis(millis: i64) -> Self {
        let seconds = millis
            .div_euclid(1000)
            .clamp(MIN_SECONDS, MAX_SECONDS_EXCLUSIVE - 1);
        // rem_euclid(1000) is in 0..1000, so the cast and product fit in u32.
        let nanos = u32::try_from(millis.rem_euclid(1000)).unwrap_or(0) * 1_000_000;
        Timestamp { seconds, nanos }
    }

    /// Milliseconds since the Unix epoch (sub-millisecond digits are dropped).
    pub fn unix_millis(&self) -> i64 {
        self.seconds * 1000 + i64::from(self.nanos / 1_000_000)
    }

    /// This instant as a `SystemTime`, or `None` if the platform cannot represent it (some
    /// cannot reach back to year 1).
    pub fn to_system_time(&self) -> Option<SystemTime> {
        let whole = match u64::try_from(self.seconds) {
            Ok(secs) => UNIX_EPOCH.checked_add(Duration::from_secs(secs)),
            Err(_) => UNIX_EPOCH.checked_sub(Duration::from_secs(self.seconds.unsigned_abs())),
        };
        whole?.checked_add(Duration::from_nanos(u64::from(self.nanos)))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    // day is in 1..=31 and month in 1..=12 by construction.
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

fn is_leap_year(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 31,
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.seconds.div_euclid(86_400);
        let secs_of_day = self.seconds.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
            secs_of_day / 3600,
            secs_of_day % 3600 / 60,
            secs_of_day % 60
        )?;
        // The shortest exact fraction among none, 3, 6 and 9 digits, as ProtoJSON writes it.
        let nanos = self.nanos;
        if nanos == 0 {
            f.write_str("Z")
        } else if nanos.is_multiple_of(1_000_000) {
            write!(f, ".{:03}Z", nanos / 1_000_000)
        } else if nanos.is_multiple_of(1000) {
            write!(f, ".{:06}Z", nanos / 1000)
        } else {
            write!(f, ".{nanos:09}Z")
        }
    }
}

impl FromStr for Timestamp {
    type Err = InvalidTimestamp;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason| InvalidTimestamp {
            input: input.to_owned(),
            reason,
        };
        let b = input.as_bytes();
        let digits = |range: std::ops::Range<usize>| -> Option<u32> {
            let slice = b.get(range)?;
            if slice.is_empty() || !slice.iter().all(u8::is_ascii_digit) {
                return None;
            }
            slice.iter().try_fold(0u32, |acc, d| {
                acc.checked_mul(10)?.checked_add(u32::from(d - b'0'))
            })
        };
        let sep = |i: usize, allowed: &[u8]| b.get(i).is_some_and(|c| allowed.contains(c));

        if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt") && sep(13, b":") && sep(16, b":")) {
            return Err(fail("not in the form YYYY-MM-DDTHH:MM:SS"));
        }
        let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
            digits(0..4),
            digits(5..7),
            digits(8..10),
            digits(11..13),
            digits(14..16),
            digits(17..19),
        ) else {
            return Err(fail("not in the form YYYY-MM-DDTHH:MM:SS"));
        };
        let year = i64::from(year);
        if year < 1 {
            return Err(fail("year out of range 0001-9999"));
        }
        if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
            return Err(fail("no such date"));
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(fail("no such time of day"));
        }

        let mut pos = 19;
        let mut nanos = 0u32;
        if b.get(pos) == Some(&b'.') {
            let start = pos + 1;
            let mut end = start;
            while b.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            let count = end - start;
            if count == 0 || count > 9 {
                return Err(fail("fractional seconds must have 1 to 9 digits"));
            }
            let value = digits(start..end).ok_or_else(|| fail("bad fractional seconds"))?;
            nanos = value * 10u32.pow(9 - u32::try_from(count).unwrap_or(9));
            pos = end;
        }

        let offset_seconds: i64 = match b.get(pos) {
            Some(b'Z' | b'z') if b.len() == pos + 1 => 0,
            Some(sign @ (b'+' | b'-')) if b.len() == pos + 6 && b[pos + 3] == b':' => {
                let (Some(oh), Some(om)) = (digits(pos + 1..pos + 3), digits(pos + 4..pos + 6))
                else {
                    return Err(fail("bad UTC offset"));
                };
                if oh > 23 || om > 59 {
                    return Err(fail("bad UTC offset"));
                }
                let offset = i64::from(oh * 3600 + om * 60);
                if *sign == b'+' { offset } else { -offset }
            }
            _ => return Err(fail("missing or malformed time zone (use Z)")),
        };

        let seconds = days_from_civil(year, month, day) * 86_400
            + i64::from(hour * 3600 + minute * 60 + second)
            - offset_seconds;
        if !(MIN_SECONDS..MAX_SECONDS_EXCLUSIVE).contains(&seconds) {
            return Err(fail("year out of range 0001-9999"));
        }
        Ok(Timestamp { seconds, nanos })
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TimestampVisitor;

        impl Visitor<'_> for TimestampVisitor {
            type Value = Timestamp;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 timestamp string")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Timestamp, E> {
                v.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(TimestampVisitor)
    }
}

// ---------------------------------------------------------------------------------------------
// Part
// ---------------------------------------------------------------------------------------------

/// The content of a [`Part`]: the `content` oneof of the proto.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// `text`: a string.
    Text(String),
    /// `raw`: file bytes, base64 on the wire.
    Raw(Vec<u8>),
    /// `url`: a reference to file content.
    Url(String),
    /// `data`: any JSON value (object, array, string, number, boolean or null).
    Data(Value),
}

/// A piece of message or artifact content (`Part`).
///
/// In 1.0 the content member's name is the discriminator, next to optional `mediaType`,
/// `filename` and `metadata`: `{"text": "hi"}`, `{"raw": "iVBO...", "mediaType": "image/png"}`,
/// `{"url": "https://...", "filename": "a.pdf"}`, `{"data": {...}}`. The 0.3 `kind` field is
/// neither written nor required.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The content; exactly one member on the wire.
    pub content: PartContent,
    /// Optional metadata about this part.
    pub metadata: Metadata,
    /// An optional file name, e.g. `document.pdf`.
    pub filename: Option<String>,
    /// The media (MIME) type of the content, e.g. `text/plain`; valid for every kind of part.
    pub media_type: Option<String>,
}

impl Part {
    fn with_content(content: PartContent) -> Self {
        Part {
            content,
            metadata: Metadata::new(),
            filename: None,
            media_type: None,
        }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::with_content(PartContent::Text(text.into()))
    }

    /// A structured-data part.
    pub fn data(data: Value) -> Self {
        Self::with_content(PartContent::Data(data))
    }

    /// A file part carrying its bytes.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self::with_content(PartContent::Raw(bytes.into()))
    }

    /// A file part referring to content by URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self::with_content(PartContent::Url(url.into()))
    }

    /// Sets the media type.
    #[must_use]
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// Sets the file name.
    #[must_use]
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = Some(filename.into());
        self
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The JSON value, if this is a data part.
    pub fn as_data(&self) -> Option<&Value> {
        match &self.content {
            PartContent::Data(data) => Some(data),
            _ => None,
        }
    }
}

mod b64 {
    use base64::Engine as _;
    use base64::engine::general_purpose::{
        STANDARD, STANDARD_PAD_INDIFFERENT, URL_SAFE_PAD_INDIFFERENT,
    };

    pub(super) fn encode(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    /// ProtoJSON accepts the standard and the URL-safe alphabet, with or without padding.
    pub(super) fn decode(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
        if text.contains(['-', '_']) {
            URL_SAFE_PAD_INDIFFERENT.decode(text)
        } else {
            STANDARD_PAD_INDIFFERENT.decode(text)
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match &self.content {
            PartContent::Text(text) => map.serialize_entry("text", text)?,
            PartContent::Raw(bytes) => map.serialize_entry("raw", &b64::encode(bytes))?,
            PartContent::Url(url) => map.serialize_entry("url", url)?,
            PartContent::Data(data) => map.serialize_entry("data", data)?,
        }
        if !self.metadata.is_empty() {
            map.serialize_entry("metadata", &self.metadata)?;
        }
        if let Some(filename) = &self.filename {
            map.serialize_entry("filename", filename)?;
        }
        if let Some(media_type) = &self.media_type {
            map.serialize_entry("mediaType", media_type)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            #[serde(default)]
            text: Option<String>,
            #[serde(default)]
            raw: Option<String>,
            #[serde(default)]
            url: Option<String>,
            #[serde(default, deserialize_with = "present")]
            data: Option<Value>,
            #[serde(default, deserialize_with = "nullable")]
            metadata: Metadata,
            #[serde(default)]
            filename: Option<String>,
            #[serde(default)]
            media_type: Option<String>,
        }

        let wire = Wire::deserialize(deserializer)?;
        let given = [
            wire.text.is_some(),
            wire.raw.is_some(),
            wire.url.is_some(),
            wire.data.is_some(),
        ]
        .iter()
        .filter(|set| **set)
        .count();
        if given != 1 {
            return Err(de::Error::custom(format!(
                "a part must have exactly one of `text`, `raw`, `url` or `data`, found {given}"
            )));
        }
        let content = if let Some(text) = wire.text {
            PartContent::Text(text)
        } else if let Some(raw) = wire.raw {
            let bytes = b64::decode(&raw)
                .map_err(|e| de::Error::custom(format!("`raw` is not valid base64: {e}")))?;
            PartContent::Raw(bytes)
        } else if let Some(url) = wire.url {
            PartContent::Url(url)
        } else {
            PartContent::Data(wire.data.unwrap_or(Value::Null))
        };
        Ok(Part {
            content,
            metadata: wire.metadata,
            filename: wire.filename,
            media_type: wire.media_type,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// oneof wrappers
// ---------------------------------------------------------------------------------------------

/// Declares an enum for a proto `oneof` whose JSON is `{"<member>": value}`. Output is serde's
/// externally tagged form; input reads every member and insists on exactly one, ignoring
/// unknown fields (serde's own enum decoding would reject them).
macro_rules! oneof {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ty) = $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant($ty), )+
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[derive(Deserialize)]
                #[allow(non_snake_case)]
                struct Wire {
                    $( #[serde(rename = $wire, default)] $variant: Option<$ty>, )+
                }

                let wire = Wire::deserialize(deserializer)?;
                let mut found = Vec::new();
                $( if let Some(value) = wire.$variant { found.push($name::$variant(value)); } )+
                if found.len() == 1 {
                    if let Some(only) = found.pop() {
                        return Ok(only);
                    }
                }
                Err(de::Error::custom(format!(
                    concat!("a ", stringify!($name), " must have exactly one of {}, found {}"),
                    [$( concat!("`", $wire, "`") ),+].join(", "),
                    found.len()
                )))
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Core objects
// ---------------------------------------------------------------------------------------------

/// One unit of communication between client and agent (`Message`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Message {
    /// Unique id, created by the message's author. Required.
    #[serde(deserialize_with = "nullable")]
    pub message_id: String,
    /// The conversation this message belongs to. Set on every agent message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task this message belongs to, if a task exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The sender. Required.
    #[serde(deserialize_with = "nullable")]
    pub role: Role,
    /// The content. Required, at least one part.
    #[serde(deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// Extension data, keyed by extension URI by convention.
    #[serde(
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub metadata: Metadata,
    /// URIs of the extensions present in or contributing to this message.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub extensions: Vec<String>,
    /// Tasks this message refers to for context.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message with the given role, id and parts and nothing else set.
    pub fn new(role: Role, message_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Message {
            message_id: message_id.into(),
            role,
            parts,
            ..Message::default()
        }
    }

    /// Checks the fields a client message must set: `messageId`, `role` (which must be
    /// `ROLE_USER`: a client cannot speak for the agent) and at least one part. `path` is the
    /// field name reported in errors, e.g. `message`.
    pub fn validate_from_client(&self, path: &str) -> Result<(), A2aError> {
        require_non_empty(&format!("{path}.messageId"), &self.message_id)?;
        match self.role {
            Role::User => {}
            Role::Unspecified => {
                let field = format!("{path}.role");
                return Err(invalid(&field, format!("{field} is required")));
            }
            Role::Agent => {
                let field = format!("{path}.role");
                return Err(invalid(
                    &field,
                    format!("{field} must be ROLE_USER for a message sent to the agent"),
                ));
            }
        }
        if self.parts.is_empty() {
            let field = format!("{path}.parts");
            return Err(invalid(
                &field,
                format!("{field} must contain at least one part"),
            ));
        }
        Ok(())
    }
}

/// The status of a task: its state, an optional message, and when it was recorded
/// (`TaskStatus`). It has no metadata field; see the reference README for where extension
/// data goes instead.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskStatus {
    /// The state. Required.
    #[serde(deserialize_with = "nullable")]
    pub state: TaskState,
    /// A message associated with the status, e.g. the agent's question in `INPUT_REQUIRED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the status was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

impl TaskStatus {
    /// A status in `state`, stamped now.
    pub fn new(state: TaskState) -> Self {
        TaskStatus {
            state,
            message: None,
            timestamp: Some(Timestamp::now()),
        }
    }

    /// Attaches a status message.
    #[must_use]
    pub fn with_message(mut self, message: Message) -> Self {
        self.message = Some(message);
        self
    }
}

/// The unit of work in A2A (`Task`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Task {
    /// Server-generated unique id. Required.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    /// The conversation the task belongs to. This server always sets it.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub context_id: String,
    /// The current status. Required.
    #[serde(deserialize_with = "nullable")]
    pub status: TaskStatus,
    /// Output artifacts. Omitted when empty; `ListTasks` without `includeArtifacts` must omit
    /// them, so it clears this list.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub artifacts: Vec<Artifact>,
    /// The messages of the task, oldest first. Omitted when empty (`historyLength: 0`).
    #[serde(
        skip_serializing_if = "History::is_empty",
        deserialize_with = "nullable"
    )]
    pub history: History,
    /// Custom metadata, e.g. the status extension's `sub_state`.
    #[serde(
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub metadata: Metadata,
}

/// An output of a task (`Artifact`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Artifact {
    /// Unique within the task. Required.
    #[serde(deserialize_with = "nullable")]
    pub artifact_id: String,
    /// A human-readable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A human-readable description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content. Required, at least one part.
    #[serde(deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// Extension data.
    #[serde(
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub metadata: Metadata,
    /// URIs of extensions present in or contributing to this artifact.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub extensions: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Streaming events
// ---------------------------------------------------------------------------------------------

/// A change of a task's status (`TaskStatusUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskStatusUpdateEvent {
    /// The task. Required.
    #[serde(deserialize_with = "nullable")]
    pub task_id: String,
    /// The task's context. Required.
    #[serde(deserialize_with = "nullable")]
    pub context_id: String,
    /// The new status. Required.
    #[serde(deserialize_with = "nullable")]
    pub status: TaskStatus,
    /// Extension data about this update (e.g. the status extension's `sub_state`).
    #[serde(
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub metadata: Metadata,
}

/// A new or extended artifact (`TaskArtifactUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskArtifactUpdateEvent {
    /// The task. Required.
    #[serde(deserialize_with = "nullable")]
    pub task_id: String,
    /// The task's context. Required.
    #[serde(deserialize_with = "nullable")]
    pub context_id: String,
    /// The artifact or chunk. Required.
    #[serde(deserialize_with = "nullable")]
    pub artifact: Artifact,
    /// Append these parts to the artifact with the same id sent before.
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub append: bool,
    /// This is the artifact's final chunk.
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub last_chunk: bool,
    /// Extension data about this update.
    #[serde(
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub metadata: Metadata,
}

oneof! {
    /// One item of a stream, and the payload of a push notification (`StreamResponse`).
    /// The first item of every stream this server sends is a `Task` or a single `Message`.
    pub enum StreamResponse {
        /// The task's current state.
        Task(Task) = "task",
        /// A direct message from the agent (the only item of a message-only stream).
        Message(Message) = "message",
        /// A status change.
        StatusUpdate(TaskStatusUpdateEvent) = "statusUpdate",
        /// An artifact update.
        ArtifactUpdate(TaskArtifactUpdateEvent) = "artifactUpdate",
    }
}

impl StreamResponse {
    /// Whether the stream closes after this item: a message, or a task or status update whose
    /// state ends the turn (terminal, `INPUT_REQUIRED` or `AUTH_REQUIRED`; the project's
    /// resolution of the spec's stream-closing rule). Note that this holds for a `Task`
    /// snapshot too, so a `SubscribeToTask` on a task parked in `INPUT_REQUIRED` would close
    /// right after its first event; a server that wants to keep such a subscription open
    /// must treat the first event specially.
    pub fn ends_stream(&self) -> bool {
        match self {
            StreamResponse::Message(_) => true,
            StreamResponse::Task(task) => task.status.state.ends_turn(),
            StreamResponse::StatusUpdate(update) => update.status.state.ends_turn(),
            StreamResponse::ArtifactUpdate(_) => false,
        }
    }
}

oneof! {
    /// The result of `SendMessage` (`SendMessageResponse`).
    pub enum SendMessageResponse {
        /// The task created or continued by the message.
        Task(Task) = "task",
        /// A direct reply, without a task.
        Message(Message) = "message",
    }
}

// ---------------------------------------------------------------------------------------------
// Push notifications
// ---------------------------------------------------------------------------------------------

/// How the agent authenticates to a push-notification webhook (`AuthenticationInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AuthenticationInfo {
    /// An HTTP authentication scheme, e.g. `Bearer`. Required.
    #[serde(deserialize_with = "nullable")]
    pub scheme: String,
    /// The credentials for the scheme, e.g. the bearer token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// A webhook registered for a task (`TaskPushNotificationConfig`); also the request of
/// `CreateTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskPushNotificationConfig {
    /// Routing identifier of the selected interface, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The configuration's id; assigned by the server when a client leaves it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task. Required on create, empty inside `SendMessageConfiguration`.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub task_id: String,
    /// The webhook URL. Required.
    #[serde(deserialize_with = "nullable")]
    pub url: String,
    /// A token the agent echoes so the client can check a notification's origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How the agent authenticates to the webhook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl TaskPushNotificationConfig {
    /// Checks a `CreateTaskPushNotificationConfig` request: `taskId` and `url` are required.
    pub fn validate(&self) -> Result<(), A2aError> {
        require_non_empty("taskId", &self.task_id)?;
        require_non_empty("url", &self.url)
    }
}

/// Request of `GetTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetTaskPushNotificationConfigRequest {
    /// Routing identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(deserialize_with = "nullable")]
    pub task_id: String,
    /// The configuration. Required.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
}

impl GetTaskPushNotificationConfigRequest {
    /// `taskId` and `id` are required.
    pub fn validate(&self) -> Result<(), A2aError> {
        require_non_empty("taskId", &self.task_id)?;
        require_non_empty("id", &self.id)
    }
}

/// Request of `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeleteTaskPushNotificationConfigRequest {
    /// Routing identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(deserialize_with = "nullable")]
    pub task_id: String,
    /// The configuration. Required.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
}

impl DeleteTaskPushNotificationConfigRequest {
    /// `taskId` and `id` are required.
    pub fn validate(&self) -> Result<(), A2aError> {
        require_non_empty("taskId", &self.task_id)?;
        require_non_empty("id", &self.id)
    }
}

/// Request of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTaskPushNotificationConfigsRequest {
    /// Routing identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(deserialize_with = "nullable")]
    pub task_id: String,
    /// The most configurations to return; unset or 0 lets the server choose.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_i32"
    )]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of a previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
}

impl ListTaskPushNotificationConfigsRequest {
    /// `taskId` is required; `pageSize` cannot be negative.
    pub fn validate(&self) -> Result<(), A2aError> {
        require_non_empty("taskId", &self.task_id)?;
        require_non_negative("pageSize", self.page_size)
    }
}

/// Result of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The configurations. Always present, possibly empty.
    #[serde(deserialize_with = "nullable")]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// The token of the next page; omitted on the last page.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub next_page_token: String,
}

// ---------------------------------------------------------------------------------------------
// Requests and responses
// ---------------------------------------------------------------------------------------------

/// Options of a send (`SendMessageConfiguration`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendMessageConfiguration {
    /// Media types the client accepts for response parts.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub accepted_output_modes: Vec<String>,
    /// A webhook to register for the new task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// The most history messages to return; unset means no limit, 0 means none.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_i32"
    )]
    pub history_length: Option<i32>,
    /// Return as soon as the task exists instead of waiting for the end of the turn.
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub return_immediately: bool,
}

/// Request of `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// Routing identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The message. Required: the only field the deserializer itself insists on.
    pub message: Message,
    /// Options for this send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Request-level extension data.
    #[serde(
        default,
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub metadata: Metadata,
}

impl SendMessageRequest {
    /// Checks the message (see [`Message::validate_from_client`]), a non-negative
    /// `historyLength`, and that a webhook in the configuration has a URL.
    pub fn validate(&self) -> Result<(), A2aError> {
        self.message.validate_from_client("message")?;
        if let Some(configuration) = &self.configuration {
            require_non_negative("configuration.historyLength", configuration.history_length)?;
            if let Some(push) = &configuration.task_push_notification_config {
                require_non_empty("configuration.taskPushNotificationConfig.url", &push.url)?;
            }
        }
        Ok(())
    }
}

/// Request of `GetTask`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetTaskRequest {
    /// Routing identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    /// The most history messages to return; unset means no limit, 0 means none.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_i32"
    )]
    pub history_length: Option<i32>,
}

impl GetTaskRequest {
    /// `id` is required; `historyLength` cannot be negative.
    pub fn validate(&self) -> Result<(), A2aError> {
        require_non_empty("id", &self.id)?;
        require_non_negative("historyLength", self.history_length)
    }
}

/// Request of `ListTasks`. Over REST its fields are query parameters of the same names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTasksRequest {
    /// Routing identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Only tasks of this context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Only tasks in this state. `TASK_STATE_UNSPECIFIED` means no filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// Tasks per page, 1 to 100; unset means [`ListTasksRequest::DEFAULT_PAGE_SIZE`].
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_i32"
    )]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of a previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    /// The most history messages per task.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_i32"
    )]
    pub history_length: Option<i32>,
    /// Only tasks whose status timestamp is at or after this instant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<Timestamp>,
    /// Include artifacts (default false: they are omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

impl ListTasksRequest {
    /// The page size when the client sets none (proto comment on `page_size`).
    pub const DEFAULT_PAGE_SIZE: i32 = 50;
    /// The largest page size a client may ask for.
    pub const MAX_PAGE_SIZE: i32 = 100;

    /// `pageSize` must be 1 to 100 when set; `historyLength` cannot be negative.
    pub fn validate(&self) -> Result<(), A2aError> {
        if let Some(size) = self.page_size
            && !(1..=Self::MAX_PAGE_SIZE).contains(&size)
        {
            return Err(invalid(
                "pageSize",
                format!(
                    "pageSize must be between 1 and {} inclusive, got {size}",
                    Self::MAX_PAGE_SIZE
                ),
            ));
        }
        require_non_negative("historyLength", self.history_length)
    }

    /// The page size to use.
    pub fn effective_page_size(&self) -> i32 {
        self.page_size.unwrap_or(Self::DEFAULT_PAGE_SIZE)
    }

    /// The state filter, if any (`TASK_STATE_UNSPECIFIED` is no filter).
    pub fn status_filter(&self) -> Option<TaskState> {
        self.status.filter(|state| *state != TaskState::Unspecified)
    }
}

/// Result of `ListTasks`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTasksResponse {
    /// The page of tasks, most recently updated first.
    #[serde(deserialize_with = "nullable")]
    pub tasks: Vec<Task>,
    /// The next page's token; always present, `""` on the last page (spec 3.1.4).
    #[serde(deserialize_with = "nullable")]
    pub next_page_token: String,
    /// The page size used.
    #[serde(deserialize_with = "nullable")]
    pub page_size: i32,
    /// The number of matching tasks before pagination.
    #[serde(deserialize_with = "nullable")]
    pub total_size: i32,
}

/// Request of `CancelTask`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CancelTaskRequest {
    /// Routing identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    /// Request-level extension data.
    #[serde(
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub metadata: Metadata,
}

impl CancelTaskRequest {
    /// `id` is required.
    pub fn validate(&self) -> Result<(), A2aError> {
        require_non_empty("id", &self.id)
    }
}

/// Request of `SubscribeToTask`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscribeToTaskRequest {
    /// Routing identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
}

impl SubscribeToTaskRequest {
    /// `id` is required.
    pub fn validate(&self) -> Result<(), A2aError> {
        require_non_empty("id", &self.id)
    }
}

/// Request of `GetExtendedAgentCard` (JSON-RPC sends it without `params`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetExtendedAgentCardRequest {
    /// Routing identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Agent discovery
// ---------------------------------------------------------------------------------------------

/// The self-description an agent publishes at `/.well-known/agent-card.json` (`AgentCard`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCard {
    /// Human-readable name. Required.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// What the agent does. Required.
    #[serde(deserialize_with = "nullable")]
    pub description: String,
    /// Where and how to reach the agent, preferred first. Required.
    #[serde(deserialize_with = "nullable")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who provides the agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version, e.g. `1.0.0`. Required.
    #[serde(deserialize_with = "nullable")]
    pub version: String,
    /// Documentation URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Optional capabilities. Required (always written, possibly `{}`).
    #[serde(deserialize_with = "nullable")]
    pub capabilities: AgentCapabilities,
    /// Security schemes by name.
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Security requirements for contacting the agent (alternatives).
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Input media types across all skills. Required.
    #[serde(deserialize_with = "nullable")]
    pub default_input_modes: Vec<String>,
    /// Output media types across all skills. Required.
    #[serde(deserialize_with = "nullable")]
    pub default_output_modes: Vec<String>,
    /// The agent's skills. Required.
    #[serde(deserialize_with = "nullable")]
    pub skills: Vec<AgentSkill>,
    /// JWS signatures of the card.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub signatures: Vec<AgentCardSignature>,
    /// Icon URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

/// One way to reach the agent (`AgentInterface`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentInterface {
    /// The endpoint URL. Required.
    #[serde(deserialize_with = "nullable")]
    pub url: String,
    /// `JSONRPC`, `GRPC`, `HTTP+JSON` or a custom binding URI. Required.
    #[serde(deserialize_with = "nullable")]
    pub protocol_binding: String,
    /// Routing identifier clients must send as `tenant`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The A2A version served here, e.g. `1.0`. Required.
    #[serde(deserialize_with = "nullable")]
    pub protocol_version: String,
}

impl AgentInterface {
    /// The `protocolBinding` of the JSON-RPC binding.
    pub const JSONRPC: &'static str = "JSONRPC";
    /// The `protocolBinding` of the HTTP+JSON (REST) binding.
    pub const HTTP_JSON: &'static str = "HTTP+JSON";
    /// The `protocolBinding` of the gRPC binding.
    pub const GRPC: &'static str = "GRPC";

    /// An interface speaking [`PROTOCOL_VERSION`].
    pub fn new(url: impl Into<String>, protocol_binding: impl Into<String>) -> Self {
        AgentInterface {
            url: url.into(),
            protocol_binding: protocol_binding.into(),
            tenant: None,
            protocol_version: PROTOCOL_VERSION.to_owned(),
        }
    }
}

/// The organisation behind an agent (`AgentProvider`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentProvider {
    /// The provider's website. Required.
    #[serde(deserialize_with = "nullable")]
    pub url: String,
    /// The provider's name. Required.
    #[serde(deserialize_with = "nullable")]
    pub organization: String,
}

/// Optional features the agent supports (`AgentCapabilities`). An absent flag means
/// unsupported (spec 3.3.4).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask` are available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notification configuration is available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// The protocol extensions the agent supports.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub extensions: Vec<AgentExtension>,
    /// `GetExtendedAgentCard` is available to authenticated clients.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// A protocol extension the agent supports (`AgentExtension`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentExtension {
    /// The extension's URI.
    #[serde(deserialize_with = "nullable")]
    pub uri: String,
    /// How this agent uses the extension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Clients must activate the extension (`A2A-Extensions`) to talk to this agent.
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub required: bool,
    /// Extension-specific configuration.
    #[serde(
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub params: Metadata,
}

/// Something the agent can do (`AgentSkill`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSkill {
    /// Unique id. Required.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    /// Human-readable name. Required.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// What the skill does. Required.
    #[serde(deserialize_with = "nullable")]
    pub description: String,
    /// Keywords. Required.
    #[serde(deserialize_with = "nullable")]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub examples: Vec<String>,
    /// Input media types, overriding the card's defaults.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub input_modes: Vec<String>,
    /// Output media types, overriding the card's defaults.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub output_modes: Vec<String>,
    /// Security requirements specific to this skill.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// A JWS signature over the card (`AgentCardSignature`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCardSignature {
    /// The base64url protected header. Required.
    #[serde(deserialize_with = "nullable")]
    pub protected: String,
    /// The base64url signature. Required.
    #[serde(deserialize_with = "nullable")]
    pub signature: String,
    /// The unprotected header.
    #[serde(
        skip_serializing_if = "Metadata::is_empty",
        deserialize_with = "nullable"
    )]
    pub header: Metadata,
}

// ---------------------------------------------------------------------------------------------
// Security
// ---------------------------------------------------------------------------------------------

/// A list of strings (`StringList`): the scopes in a [`SecurityRequirement`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StringList {
    /// The values.
    #[serde(deserialize_with = "nullable")]
    pub list: Vec<String>,
}

/// Security schemes that together satisfy a requirement, with their scopes
/// (`SecurityRequirement`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SecurityRequirement {
    /// Scheme name (a key of `AgentCard.securitySchemes`) to required scopes.
    #[serde(deserialize_with = "nullable")]
    pub schemes: BTreeMap<String, StringList>,
}

oneof! {
    /// How clients authenticate (`SecurityScheme`), after the OpenAPI security scheme object.
    pub enum SecurityScheme {
        /// An API key in a header, query parameter or cookie.
        ApiKey(ApiKeySecurityScheme) = "apiKeySecurityScheme",
        /// HTTP authentication, e.g. `Bearer`.
        HttpAuth(HttpAuthSecurityScheme) = "httpAuthSecurityScheme",
        /// OAuth 2.0.
        OAuth2(OAuth2SecurityScheme) = "oauth2SecurityScheme",
        /// OpenID Connect.
        OpenIdConnect(OpenIdConnectSecurityScheme) = "openIdConnectSecurityScheme",
        /// Mutual TLS.
        MutualTls(MutualTlsSecurityScheme) = "mtlsSecurityScheme",
    }
}

impl SecurityScheme {
    /// HTTP bearer authentication, optionally naming the token format (e.g. `JWT`).
    pub fn bearer(bearer_format: Option<&str>) -> Self {
        SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            description: None,
            scheme: "Bearer".to_owned(),
            bearer_format: bearer_format.map(str::to_owned),
        })
    }
}

/// API-key authentication (`APIKeySecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApiKeySecurityScheme {
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `query`, `header` or `cookie`. Required.
    #[serde(deserialize_with = "nullable")]
    pub location: String,
    /// The header, query parameter or cookie name. Required.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
}

/// HTTP authentication (`HTTPAuthSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HttpAuthSecurityScheme {
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The `Authorization` scheme, e.g. `Bearer`. Required.
    #[serde(deserialize_with = "nullable")]
    pub scheme: String,
    /// A hint at the bearer token's format, e.g. `JWT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
}

/// OAuth 2.0 (`OAuth2SecurityScheme`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The supported flow. Required.
    pub flows: OAuthFlows,
    /// RFC 8414 authorization server metadata URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2_metadata_url: Option<String>,
}

/// OpenID Connect (`OpenIdConnectSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OpenIdConnectSecurityScheme {
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The OpenID Connect discovery URL. Required.
    #[serde(deserialize_with = "nullable")]
    pub open_id_connect_url: String,
}

/// Mutual TLS (`MutualTlsSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MutualTlsSecurityScheme {
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

oneof! {
    /// The OAuth 2.0 flow a scheme supports (`OAuthFlows`).
    pub enum OAuthFlows {
        /// Authorization code (with PKCE).
        AuthorizationCode(AuthorizationCodeOAuthFlow) = "authorizationCode",
        /// Client credentials.
        ClientCredentials(ClientCredentialsOAuthFlow) = "clientCredentials",
        /// Implicit. Deprecated in the proto.
        Implicit(ImplicitOAuthFlow) = "implicit",
        /// Password. Deprecated in the proto.
        Password(PasswordOAuthFlow) = "password",
        /// Device code (RFC 8628).
        DeviceCode(DeviceCodeOAuthFlow) = "deviceCode",
    }
}

/// The authorization-code flow (`AuthorizationCodeOAuthFlow`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AuthorizationCodeOAuthFlow {
    /// Authorization URL. Required.
    #[serde(deserialize_with = "nullable")]
    pub authorization_url: String,
    /// Token URL. Required.
    #[serde(deserialize_with = "nullable")]
    pub token_url: String,
    /// Refresh URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description. Required.
    #[serde(deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
    /// PKCE is required.
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub pkce_required: bool,
}

/// The client-credentials flow (`ClientCredentialsOAuthFlow`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientCredentialsOAuthFlow {
    /// Token URL. Required.
    #[serde(deserialize_with = "nullable")]
    pub token_url: String,
    /// Refresh URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description. Required.
    #[serde(deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}

/// The implicit flow (`ImplicitOAuthFlow`), deprecated.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ImplicitOAuthFlow {
    /// Authorization URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    /// Refresh URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description.
    #[serde(deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}

/// The password flow (`PasswordOAuthFlow`), deprecated.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PasswordOAuthFlow {
    /// Token URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Refresh URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description.
    #[serde(deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}

/// The device-code flow (`DeviceCodeOAuthFlow`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceCodeOAuthFlow {
    /// Device authorization URL. Required.
    #[serde(deserialize_with = "nullable")]
    pub device_authorization_url: String,
    /// Token URL. Required.
    #[serde(deserialize_with = "nullable")]
    pub token_url: String,
    /// Refresh URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    /// Scope name to description. Required.
    #[serde(deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}

// ---------------------------------------------------------------------------------------------
// Decoding with readable errors
// ---------------------------------------------------------------------------------------------

/// Decodes `value` as `T`, turning a failure into `InvalidParams` whose message names the
/// offending field by its JSON path (e.g. `message.parts[0]: a part must have exactly one
/// of ...`, or `message.role is required` style messages for missing fields).
///
/// Used for JSON-RPC `params` and REST bodies alike, so both bindings report the same text.
pub fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, A2aError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner().to_string();
        readable_decode_error(&path, &inner)
    })
}

/// Builds the `InvalidParams` error for a serde failure at `path` (`.` for the root).
fn readable_decode_error(path: &str, serde_message: &str) -> A2aError {
    let at_root = path.is_empty() || path == ".";
    // serde reports a missing field as "missing field `name`" at the enclosing object.
    if let Some(name) = serde_message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        let field = if at_root {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        return invalid(&field, format!("{field} is required"));
    }
    if at_root {
        A2aError::InvalidParams {
            message: serde_message.to_owned(),
            field: None,
        }
    } else {
        invalid(path, format!("{path}: {serde_message}"))
    }
}

// ---------------------------------------------------------------------------------------------
// History
// ---------------------------------------------------------------------------------------------

/// A task's messages, oldest first, as an answer carries them.
///
/// The store keeps each message as the JSON text the harness serialized it
/// to. An answer whose older messages are read back from the store keeps them
/// as that text, and a JSON answer copies it as it is: answering with a long
/// history (A2A's default when `historyLength` is unset) costs a copy per
/// message, not a parse into a tree of values and a serialization back.
/// Whatever needs a message's fields parses it then ([`History::iter`]).
#[derive(Debug, Clone, Default)]
pub struct History {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
enum Entry {
    Parsed(Message),
    /// A message as the store keeps it: JSON text the harness serialized
    /// from a [`Message`], so it is already the message's wire form.
    Stored(Box<RawValue>),
}

impl History {
    /// Messages as the store keeps them (each one's JSON text).
    ///
    /// Checks that each is JSON, not that it is a message: the store holds
    /// only what the harness wrote.
    pub fn from_stored(documents: Vec<String>) -> Result<Self, serde_json::Error> {
        let entries = documents
            .into_iter()
            .map(|document| RawValue::from_string(document).map(Entry::Stored))
            .collect::<Result<_, _>>()?;
        Ok(History { entries })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keeps only the newest `length` messages.
    pub fn keep_newest(&mut self, length: usize) {
        let drop = self.entries.len().saturating_sub(length);
        self.entries.drain(..drop);
    }

    /// Each message, parsed from the store's text where it came from there.
    pub fn iter(&self) -> impl Iterator<Item = Result<Cow<'_, Message>, serde_json::Error>> + '_ {
        self.entries.iter().map(|entry| match entry {
            Entry::Parsed(message) => Ok(Cow::Borrowed(message)),
            Entry::Stored(text) => serde_json::from_str(text.get()).map(Cow::Owned),
        })
    }

    /// The messages, parsed.
    pub fn to_messages(&self) -> Result<Vec<Message>, serde_json::Error> {
        self.iter()
            .map(|message| message.map(Cow::into_owned))
            .collect()
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        messages.into_iter().collect()
    }
}

impl FromIterator<Message> for History {
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        History {
            entries: messages.into_iter().map(Entry::Parsed).collect(),
        }
    }
}

/// Two histories are equal when their messages are, however each is held.
impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.iter().zip(other.iter()).all(|pair| match pair {
                (Ok(mine), Ok(theirs)) => mine == theirs,
                _ => false,
            })
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.entries.len()))?;
        for entry in &self.entries {
            match entry {
                Entry::Parsed(message) => seq.serialize_element(message)?,
                Entry::Stored(text) => seq.serialize_element(text)?,
            }
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(History::from)
    }
}

#[cfg(test)]
mod history_tests {
    use super::*;

    fn message(id: &str, text: &str) -> Message {
        Message {
            message_id: id.into(),
            role: Role::Agent,
            parts: vec![Part::text(text)],
            ..Message::default()
        }
    }

    fn stored(messages: &[Message]) -> History {
        let documents = messages
            .iter()
            .map(|m| serde_json::to_string(m).expect("serializes"))
            .collect();
        History::from_stored(documents).expect("stored text is JSON")
    }

    #[test]
    fn stored_messages_serialize_as_the_parsed_ones_do() {
        let messages = vec![message("a", "one \"quoted\"\n"), message("b", "two")];
        let parsed = History::from(messages.clone());
        let from_store = stored(&messages);
        assert_eq!(
            serde_json::to_string(&from_store).expect("serializes"),
            serde_json::to_string(&parsed).expect("serializes")
        );
        assert_eq!(from_store, parsed);
        assert_eq!(from_store.to_messages().expect("parses"), messages);
        // The JSON-value path (the gRPC binding converts through it) reads the text too.
        assert_eq!(
            serde_json::to_value(&from_store).expect("to a value"),
            serde_json::to_value(&messages).expect("to a value")
        );
    }

    #[test]
    fn keeping_the_newest_drops_the_oldest() {
        let mut history = stored(&[message("a", "1"), message("b", "2"), message("c", "3")]);
        history.keep_newest(2);
        let ids: Vec<String> = history
            .to_messages()
            .expect("parses")
            .into_iter()
            .map(|m| m.message_id)
            .collect();
        assert_eq!(ids, ["b", "c"]);
        history.keep_newest(5);
        assert_eq!(history.len(), 2);
        history.keep_newest(0);
        assert!(history.is_empty());
    }

    #[test]
    fn text_that_is_not_json_is_refused_at_once() {
        assert!(History::from_stored(vec!["{\"messageId\":".into()]).is_err());
    }

    #[test]
    fn a_stored_message_that_is_not_a_message_fails_when_parsed() {
        let history = History::from_stored(vec!["[1, 2]".into()]).expect("JSON");
        assert!(history.to_messages().is_err());
        assert_ne!(
            history,
            History::from_stored(vec!["[1, 2]".into()]).expect("JSON")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Parses `text` as `T`, re-serializes it and checks the JSON is unchanged.
    fn round_trip<T>(text: &str) -> T
    where
        T: DeserializeOwned + Serialize,
    {
        let original: Value = serde_json::from_str(text).expect("example is valid JSON");
        let parsed: T = decode(&original).expect("example decodes");
        let written = serde_json::to_value(&parsed).expect("serializes");
        assert_eq!(written, original, "round trip changed the JSON");
        parsed
    }

    fn decode_err<T: DeserializeOwned + fmt::Debug>(value: Value) -> (String, Option<String>) {
        match decode::<T>(&value) {
            Err(A2aError::InvalidParams { message, field }) => (message, field),
            other => panic!("expected InvalidParams, got {other:?}"),
        }
    }

    // --- Examples from specification.md, verbatim --------------------------------------------

    #[test]
    fn spec_6_1_send_message_request() {
        let request: SendMessageRequest = round_trip(
            r#"{
              "message": {
                "role": "ROLE_USER",
                "parts": [{"text": "What is the weather today?"}],
                "messageId": "msg-uuid"
              }
            }"#,
        );
        assert_eq!(request.message.role, Role::User);
        assert_eq!(
            request.message.parts[0].as_text(),
            Some("What is the weather today?")
        );
        assert!(request.validate().is_ok());
    }

    #[test]
    fn spec_6_1_completed_task_response() {
        let response: SendMessageResponse = round_trip(
            r#"{
              "task": {
                "id": "task-uuid",
                "contextId": "context-uuid",
                "status": {"state": "TASK_STATE_COMPLETED"},
                "artifacts": [{
                  "artifactId": "artifact-uuid",
                  "name": "Weather Report",
                  "parts": [{"text": "Today will be sunny with a high of 75°F"}]
                }]
              }
            }"#,
        );
        let SendMessageResponse::Task(task) = response else {
            panic!("expected a task");
        };
        assert!(task.status.state.is_terminal());
        assert_eq!(task.artifacts[0].name.as_deref(), Some("Weather Report"));
    }

    #[test]
    fn spec_6_2_stream_events() {
        let events = [
            r#"{"task": {"id": "task-uuid", "contextId": "context-uuid", "status": {"state": "TASK_STATE_WORKING"}}}"#,
            r##"{"artifactUpdate": {"taskId": "task-uuid", "contextId": "context-uuid", "artifact": {"parts": [{"text": "# Climate Change Report\n\n"}]}}}"##,
            r#"{"statusUpdate": {"taskId": "task-uuid", "contextId": "context-uuid", "status": {"state": "TASK_STATE_COMPLETED"}}}"#,
        ];
        // The artifact in the spec's example has no artifactId; we always write the required
        // field, so compare that event field by field instead of verbatim.
        let first: StreamResponse = round_trip(events[0]);
        assert!(!first.ends_stream());
        let second: StreamResponse =
            decode(&serde_json::from_str(events[1]).expect("json")).expect("decodes");
        let StreamResponse::ArtifactUpdate(update) = &second else {
            panic!("expected artifactUpdate");
        };
        assert_eq!(
            update.artifact.parts[0].as_text(),
            Some("# Climate Change Report\n\n")
        );
        assert!(!second.ends_stream());
        let third: StreamResponse = round_trip(events[2]);
        assert!(third.ends_stream());
    }

    #[test]
    fn spec_6_3_input_required_and_follow_up() {
        // The status message in the spec's example lacks messageId; it decodes (lenient input).
        let response: SendMessageResponse = decode(&json!({
          "task": {
            "id": "task-uuid",
            "status": {
              "state": "TASK_STATE_INPUT_REQUIRED",
              "message": {
                "role": "ROLE_AGENT",
                "parts": [{"text": "I need more details. Where would you like to fly from and to?"}]
              }
            }
          }
        }))
        .expect("decodes");
        let SendMessageResponse::Task(task) = response else {
            panic!("expected a task");
        };
        assert!(task.status.state.is_interrupted());
        assert!(task.status.state.ends_turn());
        assert_eq!(task.status.message.map(|m| m.role), Some(Role::Agent));

        let follow_up: SendMessageRequest = round_trip(
            r#"{
              "message": {
                "taskId": "task-uuid",
                "role": "ROLE_USER",
                "parts": [{"text": "From San Francisco to New York"}],
                "messageId": "msg-2"
              }
            }"#,
        );
        assert_eq!(follow_up.message.task_id.as_deref(), Some("task-uuid"));
    }

    #[test]
    fn spec_6_5_list_tasks_responses() {
        let page: ListTasksResponse = round_trip(
            r#"{
              "tasks": [
                {
                  "id": "3f36680c-7f37-4a5f-945e-d78981fafd36",
                  "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
                  "status": {
                    "state": "TASK_STATE_COMPLETED",
                    "timestamp": "2024-03-15T10:15:00Z"
                  }
                }
              ],
              "totalSize": 5,
              "pageSize": 10,
              "nextPageToken": ""
            }"#,
        );
        assert_eq!(page.total_size, 5);
        assert_eq!(page.tasks[0].status.state, TaskState::Completed);

        let working: ListTasksResponse = round_trip(
            r#"{
              "tasks": [
                {
                  "id": "789abc-def0-1234-5678-9abcdef01234",
                  "contextId": "another-context-id",
                  "status": {
                    "state": "TASK_STATE_WORKING",
                    "message": {
                      "role": "ROLE_AGENT",
                      "parts": [
                        {
                          "text": "Processing your document analysis..."
                        }
                      ],
                      "messageId": "msg-status-update"
                    },
                    "timestamp": "2024-03-15T10:20:00Z"
                  }
                }
              ],
              "totalSize": 1,
              "pageSize": 20,
              "nextPageToken": ""
            }"#,
        );
        assert_eq!(working.tasks[0].status.state, TaskState::Working);
    }

    #[test]
    fn spec_6_5_validation_error_example_is_rejected() {
        // GET /tasks?pageSize=150&historyLength=-5&status=TASK_STATE_RUNNING
        let (message, field) = decode_err::<ListTasksRequest>(json!({
            "pageSize": 150, "historyLength": -5, "status": "TASK_STATE_RUNNING"
        }));
        assert_eq!(field.as_deref(), Some("status"));
        assert!(
            message.contains("unknown TaskState value \"TASK_STATE_RUNNING\""),
            "{message}"
        );
        assert!(message.contains("TASK_STATE_AUTH_REQUIRED"), "{message}");

        let request: ListTasksRequest =
            decode(&json!({"pageSize": 150, "historyLength": -5})).expect("decodes");
        let Err(A2aError::InvalidParams { message, field }) = request.validate() else {
            panic!("pageSize 150 must be rejected");
        };
        assert_eq!(field.as_deref(), Some("pageSize"));
        assert_eq!(
            message,
            "pageSize must be between 1 and 100 inclusive, got 150"
        );
    }

    #[test]
    fn spec_6_6_push_notification_setup() {
        let request: SendMessageRequest = round_trip(
            r#"{
              "message": {
                "role": "ROLE_USER",
                "parts": [
                  {
                    "text": "Generate the Q1 sales report. This usually takes a while. Notify me when it's ready."
                  }
                ],
                "messageId": "6dbc13b5-bd57-4c2b-b503-24e381b6c8d6"
              },
              "configuration": {
                "taskPushNotificationConfig": {
                  "url": "https://client.example.com/webhook/a2a-notifications",
                  "authentication": {
                    "scheme": "Bearer",
                    "credentials": "secure-client-token-for-task-aaa"
                  }
                }
              }
            }"#,
        );
        let push = request
            .configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.as_ref())
            .expect("push config");
        assert_eq!(
            push.authentication.as_ref().map(|a| a.scheme.as_str()),
            Some("Bearer")
        );
        assert!(request.validate().is_ok());

        let notification: StreamResponse = round_trip(
            r#"{
              "statusUpdate": {
                "taskId": "43667960-d455-4453-b0cf-1bae4955270d",
                "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
                "status": {
                  "state": "TASK_STATE_COMPLETED",
                  "timestamp": "2024-03-15T18:30:00Z"
                }
              }
            }"#,
        );
        assert!(notification.ends_stream());
    }

    #[test]
    fn spec_6_7_file_parts() {
        // The request example in 6.7 is not valid JSON (a missing comma) and its base64 is
        // elided, so the same shape with real bytes.
        let request: SendMessageRequest = round_trip(
            r#"{
              "message": {
                "role": "ROLE_USER",
                "parts": [
                  {"text": "Analyze this image and highlight any faces."},
                  {"raw": "iVBORw0KGgo=", "filename": "input_image.png", "mediaType": "image/png"}
                ],
                "messageId": "6dbc13b5-bd57-4c2b-b503-24e381b6c8d6"
              }
            }"#,
        );
        assert_eq!(
            request.message.parts[1].content,
            PartContent::Raw(vec![0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'])
        );

        let response: SendMessageResponse = round_trip(
            r#"{
              "task": {
                "id": "43667960-d455-4453-b0cf-1bae4955270d",
                "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
                "status": {
                  "state": "TASK_STATE_COMPLETED",
                  "timestamp": "2024-03-15T12:05:00Z"
                },
                "artifacts": [
                  {
                    "artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1",
                    "name": "processed_image_with_faces.png",
                    "parts": [
                      {
                        "url": "https://storage.example.com/processed/task-bbb/output.png?token=xyz",
                        "filename": "output.png",
                        "mediaType": "image/png"
                      }
                    ]
                  }
                ]
              }
            }"#,
        );
        let SendMessageResponse::Task(task) = response else {
            panic!("expected a task");
        };
        let part = &task.artifacts[0].parts[0];
        assert!(matches!(&part.content, PartContent::Url(u) if u.starts_with("https://storage")));
        assert_eq!(part.filename.as_deref(), Some("output.png"));
    }

    #[test]
    fn spec_6_8_structured_data() {
        let request: SendMessageRequest = round_trip(
            r#"{
              "message": {
                "role": "ROLE_USER",
                "parts": [
                  {
                    "text": "Show me a list of my open IT tickets",
                    "metadata": {
                      "mediaType": "application/json",
                      "schema": {
                        "type": "array",
                        "items": {
                          "type": "object",
                          "properties": {
                            "ticketNumber": { "type": "string" },
                            "description": { "type": "string" }
                          }
                        }
                      }
                    }
                  }
                ],
                "messageId": "85b26db5-ffbb-4278-a5da-a7b09dea1b47"
              }
            }"#,
        );
        assert_eq!(
            request.message.parts[0].metadata["mediaType"],
            json!("application/json")
        );

        let response: SendMessageResponse = round_trip(
            r#"{
              "task": {
                "id": "d8c6243f-5f7a-4f6f-821d-957ce51e856c",
                "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
                "status": {
                  "state": "TASK_STATE_COMPLETED",
                  "timestamp": "2025-04-17T17:47:09.680794Z"
                },
                "artifacts": [
                  {
                    "artifactId": "c5e0382f-b57f-4da7-87d8-b85171fad17c",
                    "parts": [
                      {
                        "text": "[{\"ticketNumber\":\"REQ12312\",\"description\":\"request for VPN access\"},{\"ticketNumber\":\"REQ23422\",\"description\":\"Add to DL - team-gcp-onboarding\"}]"
                      }
                    ]
                  }
                ]
              }
            }"#,
        );
        let SendMessageResponse::Task(task) = response else {
            panic!("expected a task");
        };
        assert_eq!(
            task.status.timestamp.map(|t| t.to_string()).as_deref(),
            Some("2025-04-17T17:47:09.680794Z")
        );
    }

    #[test]
    fn spec_8_5_sample_agent_card() {
        let card: AgentCard = round_trip(
            r#"{
              "name": "GeoSpatial Route Planner Agent",
              "description": "Provides advanced route planning, traffic analysis, and custom map generation services. This agent can calculate optimal routes, estimate travel times considering real-time traffic, and create personalized maps with points of interest.",
              "supportedInterfaces": [
                {"url": "https://georoute-agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "https://georoute-agent.example.com/a2a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "https://georoute-agent.example.com/a2a/json", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
              ],
              "provider": {
                "organization": "Example Geo Services Inc.",
                "url": "https://www.examplegeoservices.com"
              },
              "iconUrl": "https://georoute-agent.example.com/icon.png",
              "version": "1.2.0",
              "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
              "capabilities": {
                "streaming": true,
                "pushNotifications": true,
                "extendedAgentCard": true
              },
              "securitySchemes": {
                "google": {
                  "openIdConnectSecurityScheme": {
                    "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"
                  }
                }
              },
              "securityRequirements": [{ "schemes": { "google": { "list": ["openid", "profile", "email"] } } }],
              "defaultInputModes": ["application/json", "text/plain"],
              "defaultOutputModes": ["application/json", "image/png"],
              "skills": [
                {
                  "id": "route-optimizer-traffic",
                  "name": "Traffic-Aware Route Optimizer",
                  "description": "Calculates the optimal driving route between two or more locations, taking into account real-time traffic conditions, road closures, and user preferences (e.g., avoid tolls, prefer highways).",
                  "tags": ["maps", "routing", "navigation", "directions", "traffic"],
                  "examples": [
                    "Plan a route from '1600 Amphitheatre Parkway, Mountain View, CA' to 'San Francisco International Airport' avoiding tolls.",
                    "{\"origin\": {\"lat\": 37.422, \"lng\": -122.084}, \"destination\": {\"lat\": 37.7749, \"lng\": -122.4194}, \"preferences\": [\"avoid_ferries\"]}"
                  ],
                  "inputModes": ["application/json", "text/plain"],
                  "outputModes": [
                    "application/json",
                    "application/vnd.geo+json",
                    "text/html"
                  ]
                },
                {
                  "id": "custom-map-generator",
                  "name": "Personalized Map Generator",
                  "description": "Creates custom map images or interactive map views based on user-defined points of interest, routes, and style preferences. Can overlay data layers.",
                  "tags": ["maps", "customization", "visualization", "cartography"],
                  "examples": [
                    "Generate a map of my upcoming road trip with all planned stops highlighted.",
                    "Show me a map visualizing all coffee shops within a 1-mile radius of my current location."
                  ],
                  "inputModes": ["application/json"],
                  "outputModes": [
                    "image/png",
                    "image/jpeg",
                    "application/json",
                    "text/html"
                  ]
                }
              ],
              "signatures": [
                {
                  "protected": "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpPU0UiLCJraWQiOiJrZXktMSIsImprdSI6Imh0dHBzOi8vZXhhbXBsZS5jb20vYWdlbnQvandrcy5qc29uIn0",
                  "signature": "QFdkNLNszlGj3z3u0YQGt_T9LixY3qtdQpZmsTdDHDe3fXV9y9-B3m2-XgCpzuhiLt8E0tV6HXoZKHv4GtHgKQ"
                }
              ]
            }"#,
        );
        assert_eq!(card.supported_interfaces.len(), 3);
        assert!(matches!(
            card.security_schemes.get("google"),
            Some(SecurityScheme::OpenIdConnect(_))
        ));
        assert_eq!(card.capabilities.extended_agent_card, Some(true));
    }

    #[test]
    fn spec_4_6_extension_declaration_card_and_message() {
        // Verbatim but for the trailing comma after "protocolVersion", which makes the spec's
        // text invalid JSON. The example omits the required `version` and spells out
        // `"required": false`; output writes the former and omits the latter, so this checks
        // a typed round trip plus exactly that normalisation.
        let text = r#"{
          "name": "Research Assistant Agent",
          "description": "AI agent for academic research and fact-checking",
          "supportedInterfaces": [
            {
              "url": "https://research-agent.example.com/a2a/v1",
              "protocolBinding": "HTTP+JSON",
              "protocolVersion": "0.3"
            }
          ],
          "capabilities": {
            "streaming": false,
            "pushNotifications": false,
            "extensions": [
              {
                "uri": "https://standards.org/extensions/citations/v1",
                "description": "Provides citation formatting and source verification",
                "required": false
              },
              {
                "uri": "https://example.com/extensions/geolocation/v1",
                "description": "Location-based search capabilities",
                "required": false
              }
            ]
          },
          "defaultInputModes": ["text/plain"],
          "defaultOutputModes": ["text/plain"],
          "skills": [
            {
              "id": "academic-research",
              "name": "Academic Research Assistant",
              "description": "Provides research assistance with citations and source verification",
              "tags": ["research", "citations", "academic"],
              "examples": ["Find peer-reviewed articles on climate change"],
              "inputModes": ["text/plain"],
              "outputModes": ["text/plain"]
            }
          ]
        }"#;
        let mut expected: Value = serde_json::from_str(text).expect("valid JSON");
        let card: AgentCard = decode(&expected).expect("decodes");
        assert_eq!(card.capabilities.streaming, Some(false));
        assert!(!card.capabilities.extensions[0].required);
        expected["version"] = json!("");
        for extension in expected["capabilities"]["extensions"]
            .as_array_mut()
            .expect("array")
        {
            extension
                .as_object_mut()
                .expect("object")
                .remove("required");
        }
        assert_eq!(serde_json::to_value(&card).expect("serializes"), expected);

        // Section 4.6.2's message, verbatim: no messageId, which output then writes as "".
        let mut expected = json!({
          "role": "ROLE_USER",
          "parts": [
            {"text": "Find restaurants near me"}
          ],
          "extensions": ["https://example.com/extensions/geolocation/v1"],
          "metadata": {
            "https://example.com/extensions/geolocation/v1": {
              "latitude": 37.7749,
              "longitude": -122.4194,
              "accuracy": 10.0,
              "timestamp": "2025-10-21T14:30:00Z"
            }
          }
        });
        let message: Message = decode(&expected).expect("decodes");
        assert_eq!(message.extensions.len(), 1);
        assert!(message.validate_from_client("message").is_err());
        expected["messageId"] = json!("");
        assert_eq!(
            serde_json::to_value(&message).expect("serializes"),
            expected
        );
    }

    #[test]
    fn extensions_md_card_with_legacy_url_and_params() {
        // extensions.md's card has a top-level `url` (0.3): ignored as an unknown field.
        let card: AgentCard = decode(&json!({
          "name": "Magic 8-ball",
          "description": "An agent that can tell your future... maybe.",
          "version": "0.1.0",
          "url": "https://example.com/agents/eightball",
          "capabilities": {
            "streaming": true,
            "extensions": [
              {
                "uri": "https://example.com/ext/konami-code/v1",
                "description": "Provide cheat codes to unlock new fortunes",
                "required": false,
                "params": {
                  "hints": [
                    "When your sims need extra cash fast",
                    "You might deny it, but we've seen the evidence of those cows."
                  ]
                }
              }
            ]
          },
          "defaultInputModes": ["text/plain"],
          "defaultOutputModes": ["text/plain"],
          "skills": [
            {
              "id": "fortune",
              "name": "Fortune teller",
              "description": "Seek advice from the mystical magic 8-ball",
              "tags": ["mystical", "untrustworthy"]
            }
          ]
        }))
        .expect("decodes");
        assert_eq!(
            card.capabilities.extensions[0].params["hints"][0],
            json!("When your sims need extra cash fast")
        );
    }

    // --- Enums -------------------------------------------------------------------------------

    #[test]
    fn task_state_names_numbers_and_helpers() {
        for state in TaskState::ALL {
            let json = serde_json::to_value(state).expect("serializes");
            assert_eq!(json, json!(state.as_str()));
            let back: TaskState = serde_json::from_value(json).expect("parses");
            assert_eq!(back, *state);
            let by_number: TaskState =
                serde_json::from_value(json!(state.number())).expect("number parses");
            assert_eq!(by_number, *state);
        }
        let terminal: Vec<_> = TaskState::ALL.iter().filter(|s| s.is_terminal()).collect();
        assert_eq!(
            terminal,
            [
                &TaskState::Completed,
                &TaskState::Failed,
                &TaskState::Canceled,
                &TaskState::Rejected
            ]
        );
        let interrupted: Vec<_> = TaskState::ALL
            .iter()
            .filter(|s| s.is_interrupted())
            .collect();
        assert_eq!(
            interrupted,
            [&TaskState::InputRequired, &TaskState::AuthRequired]
        );
        assert!(!TaskState::Working.ends_turn());
        assert!(!TaskState::Submitted.ends_turn());
        assert!(TaskState::AuthRequired.ends_turn());
        assert_eq!(TaskState::default(), TaskState::Unspecified);
    }

    #[test]
    fn unknown_enum_values_are_rejected_clearly() {
        let err = serde_json::from_value::<TaskState>(json!("TASK_STATE_RUNNING"))
            .expect_err("unknown name");
        assert!(err.to_string().starts_with(
            "unknown TaskState value \"TASK_STATE_RUNNING\"; expected one of TASK_STATE_UNSPECIFIED, TASK_STATE_SUBMITTED"
        ), "{err}");
        // 0.3 spelled roles in lower case; 1.0 does not accept them.
        let err = serde_json::from_value::<Role>(json!("user")).expect_err("legacy name");
        assert_eq!(
            err.to_string(),
            "unknown Role value \"user\"; expected one of ROLE_UNSPECIFIED, ROLE_USER, ROLE_AGENT"
        );
        assert!(serde_json::from_value::<Role>(json!(7)).is_err());
        assert!(serde_json::from_value::<Role>(json!(-1)).is_err());
        assert!(serde_json::from_value::<Role>(json!(true)).is_err());
        assert_eq!("ROLE_AGENT".parse::<Role>(), Ok(Role::Agent));
    }

    #[test]
    fn unknown_enum_in_a_request_names_the_path() {
        let (message, field) = decode_err::<SendMessageRequest>(json!({
            "message": {"messageId": "m", "role": "ROLE_BOT", "parts": [{"text": "x"}]}
        }));
        assert_eq!(field.as_deref(), Some("message.role"));
        assert!(
            message.starts_with("message.role: unknown Role value \"ROLE_BOT\""),
            "{message}"
        );
    }

    // --- Part --------------------------------------------------------------------------------

    #[test]
    fn part_shapes() {
        let cases = [
            (Part::text("hi"), json!({"text": "hi"})),
            (
                Part::raw(b"hello".to_vec())
                    .with_media_type("text/plain")
                    .with_filename("a.txt"),
                json!({"raw": "aGVsbG8=", "filename": "a.txt", "mediaType": "text/plain"}),
            ),
            (Part::url("https://x/y"), json!({"url": "https://x/y"})),
            (
                Part::data(json!({"kind": "control", "action": "complete"}))
                    .with_media_type("application/json"),
                json!({"data": {"kind": "control", "action": "complete"}, "mediaType": "application/json"}),
            ),
            (Part::data(Value::Null), json!({"data": null})),
        ];
        for (part, expected) in cases {
            assert_eq!(serde_json::to_value(&part).expect("serializes"), expected);
            let back: Part = serde_json::from_value(expected).expect("parses");
            assert_eq!(back, part);
        }
    }

    #[test]
    fn part_needs_exactly_one_content_member() {
        for bad in [
            json!({}),
            json!({"mediaType": "text/plain"}),
            json!({"text": "a", "url": "https://x"}),
            json!({"text": null}),
            json!({"kind": "file", "file": {"name": "d.png"}}),
        ] {
            let err = serde_json::from_value::<Part>(bad.clone()).expect_err("must fail");
            assert!(
                err.to_string()
                    .starts_with("a part must have exactly one of `text`, `raw`, `url` or `data`"),
                "{bad}: {err}"
            );
        }
        // A 0.3 text part still has exactly one content member; `kind` is ignored.
        let legacy: Part =
            serde_json::from_value(json!({"kind": "text", "text": "hi"})).expect("parses");
        assert_eq!(legacy, Part::text("hi"));
    }

    #[test]
    fn raw_accepts_url_safe_and_unpadded_base64() {
        let bytes = vec![0xfb, 0xff, 0xbf];
        for text in ["+/+/", "-_-_"] {
            let part: Part = serde_json::from_value(json!({"raw": text})).expect("parses");
            assert_eq!(part.content, PartContent::Raw(bytes.clone()));
        }
        let part: Part = serde_json::from_value(json!({"raw": "aGk"})).expect("unpadded");
        assert_eq!(part.content, PartContent::Raw(b"hi".to_vec()));
        let err = serde_json::from_value::<Part>(json!({"raw": "not base64!"})).expect_err("bad");
        assert!(
            err.to_string().starts_with("`raw` is not valid base64"),
            "{err}"
        );
    }

    // --- oneof wrappers ----------------------------------------------------------------------

    #[test]
    fn stream_response_needs_exactly_one_member() {
        let err = serde_json::from_value::<StreamResponse>(json!({})).expect_err("empty");
        assert_eq!(
            err.to_string(),
            "a StreamResponse must have exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`, found 0"
        );
        let two = json!({"task": {"id": "t"}, "message": {"messageId": "m"}});
        assert!(serde_json::from_value::<StreamResponse>(two).is_err());
        // Unknown members are ignored, as for any message.
        let extra =
            json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": []}, "kind": "x"});
        assert!(matches!(
            serde_json::from_value::<StreamResponse>(extra),
            Ok(StreamResponse::Message(_))
        ));
    }

    #[test]
    fn security_schemes_and_flows() {
        let scheme = SecurityScheme::bearer(Some("JWT"));
        let json = serde_json::to_value(&scheme).expect("serializes");
        assert_eq!(
            json,
            json!({"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}})
        );
        assert_eq!(
            serde_json::from_value::<SecurityScheme>(json).expect("parses"),
            scheme
        );

        let oauth = json!({"oauth2SecurityScheme": {
            "flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {"a": "b"}}},
            "oauth2MetadataUrl": "https://m"
        }});
        let parsed: SecurityScheme = serde_json::from_value(oauth.clone()).expect("parses");
        assert!(matches!(
            &parsed,
            SecurityScheme::OAuth2(OAuth2SecurityScheme {
                flows: OAuthFlows::ClientCredentials(_),
                ..
            })
        ));
        assert_eq!(serde_json::to_value(&parsed).expect("serializes"), oauth);

        for (name, body) in [
            (
                "apiKeySecurityScheme",
                json!({"location": "header", "name": "X-Key"}),
            ),
            ("mtlsSecurityScheme", json!({"description": "client certs"})),
        ] {
            let value = json!({ name: body });
            let parsed: SecurityScheme = serde_json::from_value(value.clone()).expect("parses");
            assert_eq!(serde_json::to_value(&parsed).expect("serializes"), value);
        }
    }

    // --- Defaults, nulls and omission ---------------------------------------------------------

    #[test]
    fn missing_and_null_fields_take_defaults_and_empty_fields_are_omitted() {
        let message: Message = serde_json::from_value(json!({
            "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}],
            "contextId": null, "metadata": null, "extensions": null, "referenceTaskIds": null
        }))
        .expect("nulls are defaults");
        assert_eq!(message.context_id, None);
        assert_eq!(
            serde_json::to_value(&message).expect("serializes"),
            json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]})
        );

        let event = TaskArtifactUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            artifact: Artifact {
                artifact_id: "a".into(),
                parts: vec![Part::text("x")],
                ..Artifact::default()
            },
            ..TaskArtifactUpdateEvent::default()
        };
        assert_eq!(
            serde_json::to_value(&event).expect("serializes"),
            json!({"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}})
        );

        // ListTasksResponse always carries nextPageToken, even when empty.
        assert_eq!(
            serde_json::to_value(ListTasksResponse::default()).expect("serializes"),
            json!({"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0})
        );
        // An empty card still writes its required fields.
        assert_eq!(
            serde_json::to_value(AgentCard::default()).expect("serializes"),
            json!({"name": "", "description": "", "supportedInterfaces": [], "version": "",
                   "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []})
        );
    }

    #[test]
    fn int32_fields_accept_numbers_and_decimal_strings() {
        let request: GetTaskRequest =
            decode(&json!({"id": "t", "historyLength": "10"})).expect("string number");
        assert_eq!(request.history_length, Some(10));
        let request: GetTaskRequest =
            decode(&json!({"id": "t", "historyLength": 3.0})).expect("integral float");
        assert_eq!(request.history_length, Some(3));
        let request: GetTaskRequest =
            decode(&json!({"id": "t", "historyLength": null})).expect("null");
        assert_eq!(request.history_length, None);
        let (message, field) =
            decode_err::<GetTaskRequest>(json!({"id": "t", "historyLength": 4_294_967_296_u64}));
        assert_eq!(field.as_deref(), Some("historyLength"));
        assert!(message.contains("out of range"), "{message}");
        let (message, _) = decode_err::<GetTaskRequest>(json!({"id": "t", "historyLength": "ten"}));
        assert!(
            message.contains("\"ten\" is not a 32-bit integer"),
            "{message}"
        );
    }

    // --- Validation --------------------------------------------------------------------------

    #[test]
    fn missing_message_is_reported_by_name() {
        let (message, field) = decode_err::<SendMessageRequest>(json!({}));
        assert_eq!(message, "message is required");
        assert_eq!(field.as_deref(), Some("message"));
    }

    #[test]
    fn send_message_validation() {
        let base = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]});
        let check = |patch: Value| -> Result<(), A2aError> {
            let mut message = base.clone();
            if let (Some(target), Some(patch)) = (message.as_object_mut(), patch.as_object()) {
                for (key, value) in patch {
                    target.insert(key.clone(), value.clone());
                }
            }
            decode::<SendMessageRequest>(&json!({"message": message}))?.validate()
        };
        assert!(check(json!({})).is_ok());
        let field_of = |result: Result<(), A2aError>| match result {
            Err(A2aError::InvalidParams { field, .. }) => field,
            other => panic!("expected InvalidParams, got {other:?}"),
        };
        assert_eq!(
            field_of(check(json!({"messageId": ""}))).as_deref(),
            Some("message.messageId")
        );
        assert_eq!(
            field_of(check(json!({"role": null}))).as_deref(),
            Some("message.role")
        );
        assert_eq!(
            field_of(check(json!({"role": "ROLE_AGENT"}))).as_deref(),
            Some("message.role")
        );
        assert_eq!(
            field_of(check(json!({"parts": []}))).as_deref(),
            Some("message.parts")
        );

        let request: SendMessageRequest = decode(&json!({
            "message": base, "configuration": {"historyLength": -1}
        }))
        .expect("decodes");
        assert_eq!(
            field_of(request.validate()).as_deref(),
            Some("configuration.historyLength")
        );
    }

    #[test]
    fn other_request_validation() {
        assert!(GetTaskRequest::default().validate().is_err());
        assert!(
            GetTaskRequest {
                id: "t".into(),
                history_length: Some(-1),
                ..Default::default()
            }
            .validate()
            .is_err()
        );
        assert!(
            GetTaskRequest {
                id: "t".into(),
                ..Default::default()
            }
            .validate()
            .is_ok()
        );
        assert!(CancelTaskRequest::default().validate().is_err());
        assert!(SubscribeToTaskRequest::default().validate().is_err());
        assert!(TaskPushNotificationConfig::default().validate().is_err());
        assert!(
            GetTaskPushNotificationConfigRequest::default()
                .validate()
                .is_err()
        );
        assert!(
            DeleteTaskPushNotificationConfigRequest::default()
                .validate()
                .is_err()
        );
        assert!(
            ListTaskPushNotificationConfigsRequest::default()
                .validate()
                .is_err()
        );
        let list = ListTasksRequest {
            page_size: Some(0),
            ..Default::default()
        };
        assert!(list.validate().is_err());
        let list = ListTasksRequest::default();
        assert!(list.validate().is_ok());
        assert_eq!(list.effective_page_size(), 50);
        let list = ListTasksRequest {
            status: Some(TaskState::Unspecified),
            ..Default::default()
        };
        assert_eq!(list.status_filter(), None);
    }

    #[test]
    fn list_tasks_request_from_json_rpc_example() {
        // Section 9.4.4's params.
        let request: ListTasksRequest = round_trip(
            r#"{
              "contextId": "context-uuid",
              "status": "TASK_STATE_WORKING",
              "pageSize": 50,
              "pageToken": "cursor-token"
            }"#,
        );
        assert_eq!(request.status_filter(), Some(TaskState::Working));
        assert!(request.validate().is_ok());
    }

    #[test]
    fn list_tasks_request_from_rest_query_strings() {
        use axum::extract::Query;
        use axum::http::Uri;

        let query = |uri: &str| -> Result<ListTasksRequest, String> {
            let uri: Uri = uri.parse().map_err(|e| format!("{e}"))?;
            Query::<ListTasksRequest>::try_from_uri(&uri)
                .map(|Query(request)| request)
                .map_err(|e| e.body_text())
        };
        // Spec 6.5 and 11.5.
        let request = query(
            "/tasks?contextId=c295ea44-7543-4f78-b524-7a38915ad6e4&pageSize=10&historyLength=3",
        )
        .expect("parses");
        assert_eq!(
            request.context_id.as_deref(),
            Some("c295ea44-7543-4f78-b524-7a38915ad6e4")
        );
        assert_eq!(
            (request.page_size, request.history_length),
            (Some(10), Some(3))
        );
        let request = query("/tasks?status=TASK_STATE_WORKING&pageSize=20").expect("parses");
        assert_eq!(request.status_filter(), Some(TaskState::Working));
        let request =
            query("/tasks?includeArtifacts=true&statusTimestampAfter=2025-11-09T10%3A30%3A00Z")
                .expect("parses");
        assert_eq!(request.include_artifacts, Some(true));
        assert_eq!(
            request
                .status_timestamp_after
                .map(|t| t.to_string())
                .as_deref(),
            Some("2025-11-09T10:30:00Z")
        );
        let error = query("/tasks?pageSize=150&historyLength=-5&status=TASK_STATE_RUNNING")
            .expect_err("unknown state");
        assert!(
            error.contains("unknown TaskState value \"TASK_STATE_RUNNING\""),
            "{error}"
        );
        let request = query("/tasks?pageSize=150&historyLength=-5").expect("decodes");
        assert!(request.validate().is_err());
    }

    // --- Timestamp ---------------------------------------------------------------------------

    #[test]
    fn timestamp_formats_like_protojson() {
        assert_eq!(
            Timestamp::from_unix_millis(0).to_string(),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            Timestamp::from_unix_millis(1_730_111_400_142).to_string(),
            "2024-10-28T10:30:00.142Z"
        );
        assert_eq!(
            Timestamp::from_unix_millis(-1).to_string(),
            "1969-12-31T23:59:59.999Z"
        );
        for text in [
            "2024-03-15T10:15:00Z",
            "2025-04-17T17:47:09.680794Z",
            "2000-02-29T23:59:59.123456789Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999Z",
        ] {
            let parsed: Timestamp = text.parse().expect("parses");
            assert_eq!(parsed.to_string(), text);
        }
    }

    #[test]
    fn timestamp_parsing_normalises_and_rejects() {
        let with_offset: Timestamp = "2025-10-28T12:30:00.5+02:00".parse().expect("offset");
        assert_eq!(with_offset.to_string(), "2025-10-28T10:30:00.500Z");
        let lower: Timestamp = "2025-10-28t10:30:00z".parse().expect("lower case");
        assert_eq!(lower.to_string(), "2025-10-28T10:30:00Z");
        for bad in [
            "",
            "2025-10-28",
            "2025-10-28T10:30:00",
            "2025-10-28 10:30:00Z",
            "2025-02-29T00:00:00Z",
            "2025-13-01T00:00:00Z",
            "2025-10-28T24:00:00Z",
            "2025-10-28T10:30:60Z",
            "2025-10-28T10:30:00.Z",
            "2025-10-28T10:30:00.1234567891Z",
            "0000-01-01T00:00:00Z",
            "2025-10-28T10:30:00+0200",
            "2025-10-28T10:30:00Zjunk",
        ] {
            assert!(
                bad.parse::<Timestamp>().is_err(),
                "{bad} should be rejected"
            );
        }
        let err = serde_json::from_value::<Timestamp>(json!("yesterday")).expect_err("bad");
        assert!(
            err.to_string()
                .starts_with("invalid timestamp \"yesterday\""),
            "{err}"
        );
    }

    #[test]
    fn timestamp_order_and_now() {
        let a: Timestamp = "2024-03-15T10:15:00Z".parse().expect("a");
        let b: Timestamp = "2024-03-15T10:15:00.001Z".parse().expect("b");
        assert!(a < b);
        let now = Timestamp::now();
        let system = now.to_system_time().expect("representable");
        assert_eq!(Timestamp::from_system_time(system), now);
        assert!(now.to_string().ends_with('Z'));
        assert!(Timestamp::now() >= now);
    }
}
