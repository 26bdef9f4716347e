//! A cursor over a script's array reply, in the spirit of mini-redis's `Parse`: each
//! operation reads its reply front to back with typed steps, and anything unexpected
//! (a missing item, a wrong type, an unknown tag, items left over) is a corrupt-reply
//! error naming the reply and the position, never a default.

use deadpool_redis::redis::Value;

use super::StoreError;

pub(crate) struct Reply {
    items: std::vec::IntoIter<Value>,
    /// Names the reply in errors ("claim_due reply").
    what: &'static str,
    /// 1-based position of the next item.
    position: usize,
}

impl Reply {
    /// The cursor over a reply: an array's items, nothing for nil, or the one value
    /// a script returned bare (a number).
    pub(crate) fn new(value: Value, what: &'static str) -> Self {
        let items = match value {
            Value::Array(items) => items,
            Value::Nil => Vec::new(),
            other => vec![other],
        };
        Reply {
            items: items.into_iter(),
            what,
            position: 1,
        }
    }

    fn fail(&self, detail: impl std::fmt::Display) -> StoreError {
        StoreError::corrupt(self.what, format!("item {}: {detail}", self.position))
    }

    fn next_value(&mut self) -> Result<Value, StoreError> {
        let value = self
            .items
            .next()
            .ok_or_else(|| self.fail("the reply ended early"))?;
        self.position += 1;
        Ok(value)
    }

    /// Whether every item was read.
    pub(crate) fn is_done(&self) -> bool {
        self.items.len() == 0
    }

    /// Items not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.items.len()
    }

    /// Ends the read: items left over mean the script and this decoder disagree.
    pub(crate) fn finish(self) -> Result<(), StoreError> {
        if self.is_done() {
            Ok(())
        } else {
            Err(self.fail(format!("{} unexpected items left", self.items.len())))
        }
    }

    /// The next item's bytes (a bulk or simple string, or an integer's digits).
    pub(crate) fn bytes(&mut self) -> Result<Vec<u8>, StoreError> {
        match self.next_value()? {
            Value::BulkString(bytes) => Ok(bytes),
            Value::SimpleString(text) => Ok(text.into_bytes()),
            Value::Int(n) => Ok(n.to_string().into_bytes()),
            Value::Okay => Ok(b"OK".to_vec()),
            other => Err(self.back(format!("expected a string, got {other:?}"))),
        }
    }

    /// Reports a problem with the item just read.
    fn back(&self, detail: String) -> StoreError {
        StoreError::corrupt(self.what, format!("item {}: {detail}", self.position - 1))
    }

    pub(crate) fn text(&mut self) -> Result<String, StoreError> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes).map_err(|_| self.back("not UTF-8".into()))
    }

    /// An integer (a Lua number, or its text).
    pub(crate) fn int(&mut self) -> Result<i64, StoreError> {
        self.opt_int()?
            .ok_or_else(|| self.back("expected a number, got nothing".into()))
    }

    /// An integer, or `None` for "" (how the scripts write "unset").
    pub(crate) fn opt_int(&mut self) -> Result<Option<i64>, StoreError> {
        if let Some(Value::Int(n)) = self.items.as_slice().first() {
            let n = *n;
            self.next_value()?;
            return Ok(Some(n));
        }
        let text = self.text()?;
        if text.is_empty() {
            return Ok(None);
        }
        text.parse()
            .map(Some)
            .map_err(|_| self.back(format!("expected a number, got {text:?}")))
    }

    /// A count: a non-negative integer.
    pub(crate) fn count(&mut self) -> Result<u64, StoreError> {
        let n = self.int()?;
        u64::try_from(n).map_err(|_| self.back(format!("expected a count, got {n}")))
    }

    /// A 0/1 flag.
    pub(crate) fn flag(&mut self) -> Result<bool, StoreError> {
        match self.int()? {
            0 => Ok(false),
            1 => Ok(true),
            n => Err(self.back(format!("expected 0 or 1, got {n}"))),
        }
    }

    /// A word from a closed set, decoded by `parse`.
    pub(crate) fn word<T>(&mut self, parse: impl Fn(&str) -> Option<T>) -> Result<T, StoreError> {
        let text = self.text()?;
        parse(&text).ok_or_else(|| self.back(format!("unexpected {text:?}")))
    }

    /// `len` items as field/value pairs (a record flattened into the reply).
    pub(crate) fn fields(&mut self, len: usize) -> Result<super::records::Fields, StoreError> {
        if !len.is_multiple_of(2) || len > self.items.len() {
            return Err(self.fail(format!("a record of {len} items does not fit")));
        }
        let mut fields = super::records::Fields::new(self.what);
        for _ in 0..len / 2 {
            let name = self.text()?;
            let value = self.bytes()?;
            fields.insert(name, value);
        }
        Ok(fields)
    }

    /// Every item left, as field/value pairs.
    pub(crate) fn rest_fields(&mut self) -> Result<super::records::Fields, StoreError> {
        self.fields(self.items.len())
    }

    /// A record preceded by its item count (`count, field, value, ...`).
    pub(crate) fn counted_fields(&mut self) -> Result<super::records::Fields, StoreError> {
        let len = self.count()?;
        let len = usize::try_from(len).map_err(|_| self.back("record too long".into()))?;
        self.fields(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(items: Vec<Value>) -> Reply {
        Reply::new(Value::Array(items), "test reply")
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn reads_typed_items_in_order_and_finishes() {
        let mut r = reply(vec![bulk("ok"), Value::Int(7), bulk(""), bulk("12")]);
        assert_eq!(r.text().ok().as_deref(), Some("ok"));
        assert_eq!(r.int().ok(), Some(7));
        assert_eq!(r.opt_int().ok(), Some(None));
        assert_eq!(r.count().ok(), Some(12));
        assert!(r.finish().is_ok());
    }

    #[test]
    fn anything_unexpected_is_corrupt_with_its_position() {
        let mut r = reply(vec![bulk("x")]);
        let error = r.int().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            error.contains("test reply") && error.contains("item 1"),
            "{error}"
        );
        let mut r = reply(vec![Value::Int(-1)]);
        assert!(r.count().is_err(), "negative counts are refused");
        let mut r = reply(vec![]);
        assert!(r.text().is_err(), "a short reply is refused");
        let r = reply(vec![bulk("left over")]);
        assert!(r.finish().is_err(), "items left over are refused");
        let mut r = reply(vec![bulk("maybe")]);
        assert!(r.word(|w| (w == "ok").then_some(())).is_err());
        let mut r = reply(vec![Value::Int(2)]);
        assert!(r.flag().is_err());
    }

    #[test]
    fn a_record_must_fit_the_reply() {
        let mut r = reply(vec![Value::Int(4), bulk("a"), bulk("1")]);
        assert!(r.counted_fields().is_err());
    }
}
