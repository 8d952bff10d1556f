//! Queue properties as flat `name → value` pairs, from a Hadoop XML
//! configuration file, a TOML file, or `--set` overrides.

use std::collections::BTreeMap;
use std::path::Path;

use super::QueueError;

/// `yarn.scheduler.capacity.`, the prefix of every queue property.
pub const PREFIX: &str = crate::config::CAPACITY_PREFIX;

/// `yarn.scheduler.capacity.*` properties, by full name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueProperties {
    values: BTreeMap<String, String>,
}

impl QueueProperties {
    /// The tree Weft has when nothing is configured: root.default at 100 %.
    pub fn defaults() -> QueueProperties {
        let mut properties = QueueProperties::default();
        properties.set("yarn.scheduler.capacity.root.queues", "default");
        properties.set("yarn.scheduler.capacity.root.default.capacity", "100");
        properties
    }

    /// Sets a property. Values are trimmed, except ACLs, where a leading
    /// space is meaningful (`" admins"` is the group admins and no users).
    pub fn set(&mut self, name: &str, value: &str) {
        let name = name.trim();
        let value = if is_acl(name) {
            value.trim_matches(['\n', '\r', '\t'])
        } else {
            value.trim()
        };
        self.values.insert(name.to_string(), value.to_string());
    }

    /// The children `path`'s `queues` property lists, in order (empty
    /// entries skipped), as written: names are checked where the tree is
    /// built.
    pub fn children_of(&self, path: &str) -> Vec<&str> {
        self.get(&format!("{PREFIX}{path}.queues"))
            .map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Unsets the property `name` (its full name).
    pub fn remove(&mut self, name: &str) {
        self.values.remove(name.trim());
    }

    /// The value of the property `name` (its full name), if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Every property as (full name, value), in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The properties whose names start with `prefix`, in name order
    /// (found by range, not by a scan of every property).
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.values
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether no property is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Overlays `other` on these properties.
    pub fn extend(&mut self, other: &QueueProperties) {
        for (name, value) in other.iter() {
            self.set(name, value);
        }
    }

    /// Reads a `.xml` (Hadoop configuration) or `.toml` file. Properties not
    /// under `yarn.scheduler.capacity.` are refused in TOML; in XML, where
    /// Hadoop files mix in other settings, they are too, naming the first.
    pub fn from_file(path: &Path) -> Result<QueueProperties, QueueError> {
        let file_error = |reason: String| QueueError::File {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        let pairs = match path.extension().and_then(|e| e.to_str()) {
            Some("xml") => parse_xml(&text).map_err(file_error)?,
            Some("toml") => parse_toml(&text).map_err(file_error)?,
            _ => return Err(file_error("expected a .xml or .toml file".into())),
        };
        let mut properties = QueueProperties::default();
        for (name, value) in pairs {
            if !name.starts_with(PREFIX) {
                return Err(QueueError::UnknownAttribute { property: name });
            }
            properties.set(&name, &value);
        }
        Ok(properties)
    }
}

fn is_acl(name: &str) -> bool {
    name.ends_with(".acl_submit_applications") || name.ends_with(".acl_administer_queue")
}

/// `<configuration><property><name>N</name><value>V</value></property>…`.
fn parse_xml(text: &str) -> Result<Vec<(String, String)>, String> {
    let document =
        roxmltree::Document::parse(text).map_err(|e| format!("not well-formed XML: {e}"))?;
    let root = document.root_element();
    if root.tag_name().name() != "configuration" {
        return Err(format!(
            "the root element is <{}>, not <configuration>",
            root.tag_name().name()
        ));
    }
    let mut pairs = Vec::new();
    for property in root.children().filter(|n| n.has_tag_name("property")) {
        let child_text = |tag: &str| {
            property
                .children()
                .find(|n| n.has_tag_name(tag))
                .map(|n| n.text().unwrap_or("").to_string())
        };
        let line = document.text_pos_at(property.range().start).row;
        let name = child_text("name")
            .ok_or_else(|| format!("the <property> on line {line} has no <name>"))?;
        let value = child_text("value")
            .ok_or_else(|| format!("property {name} (line {line}) has no <value>"))?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// TOML tables or dotted quoted keys, flattened to dotted names.
fn parse_toml(text: &str) -> Result<Vec<(String, String)>, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let mut pairs = Vec::new();
    crate::config::flatten("", &toml::Value::Table(table), &mut pairs);
    Ok(pairs)
}
