//! Represents the JSON Schema of a parameter or a result, as a description holds it: `{}`, written
//! out, or generated from a type by schemars (feature `schema`) when a document is built.

use std::sync::Arc;

use serde_json::{Map, Value};

/// Holds the JSON Schema of one parameter, a whole `params` value or a result, in a method's
/// [`MethodDoc`](crate::dispatch::MethodDoc).
///
/// [`any`](SchemaDoc::any) (`{}`, what every value matches) is what a method gets when nothing
/// says more; [`json`](SchemaDoc::json) is a schema written out; with the `schema` feature,
/// [`of`](SchemaDoc::of) generates it from a type that implements `schemars::JsonSchema`.
/// Generated schemas are made when a document is built: in an OpenRPC document the types they
/// name go once into `components/schemas`, and a schema on its own
/// ([`MethodDoc::params_schema`](crate::dispatch::MethodDoc::params_schema)) carries them in `$defs`.
#[derive(Clone, Debug, Default)]
pub struct SchemaDoc(Repr);

#[derive(Clone, Debug, Default)]
enum Repr {
    #[default]
    Any,
    Json(Arc<Value>),
    #[cfg(feature = "schema")]
    Of(Generate),
}

/// Generates the schema of one type: a subschema (types it names go into the generator's
/// definitions), or a root schema (definitions inside it) when the flag is set.
#[cfg(feature = "schema")]
type Generate = fn(&mut schemars::SchemaGenerator, bool) -> schemars::Schema;

impl SchemaDoc {
    /// Returns `{}`: any value.
    pub const fn any() -> Self {
        Self(Repr::Any)
    }

    /// Returns a schema written out as JSON.
    ///
    /// ```
    /// use jrpc_runtime::SchemaDoc;
    ///
    /// let integer = SchemaDoc::json(serde_json::json!({ "type": "integer" }));
    /// # let _ = integer;
    /// ```
    pub fn json(schema: Value) -> Self {
        Self(Repr::Json(Arc::new(schema)))
    }

    /// Returns the schema schemars generates for `T`, as it is deserialized (the contract of a
    /// parameter; a result is described the same way, which for the types serde derives for both
    /// is the same schema).
    #[cfg(feature = "schema")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
    pub const fn of<T: schemars::JsonSchema + ?Sized>() -> Self {
        Self(Repr::Of(generate::<T>))
    }

    /// Returns whether this is [`any`](SchemaDoc::any).
    pub fn is_any(&self) -> bool {
        matches!(self.0, Repr::Any)
    }
}

#[cfg(feature = "schema")]
fn generate<T: schemars::JsonSchema + ?Sized>(
    generator: &mut schemars::SchemaGenerator,
    root: bool,
) -> schemars::Schema {
    if root {
        generator.root_schema_for::<T>()
    } else {
        generator.subschema_for::<T>()
    }
}

/// Takes `format` off an `integer` or `number` schema. schemars writes the Rust type there
/// (`uint8`, `int64`, `double`...), which no JSON Schema dialect defines: validators that check
/// formats (ajv, in the MCP TypeScript SDK) warn of an unknown format on every such schema. The
/// range stays, as `minimum` and `maximum`.
#[cfg(feature = "schema")]
fn strip_number_formats(schema: &mut schemars::Schema) {
    let numeric = |t: &Value| matches!(t.as_str(), Some("integer" | "number"));
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let is_number = match object.get("type") {
        Some(Value::Array(types)) => types.iter().any(numeric),
        Some(one) => numeric(one),
        None => false,
    };
    if is_number {
        object.remove("format");
    }
}

/// Renders the schemas of one document (or of one schema on its own), sharing the definitions of
/// the types they name.
pub(super) struct Renderer {
    #[cfg(feature = "schema")]
    generator: schemars::SchemaGenerator,
}

impl Renderer {
    /// Returns a renderer for an OpenRPC 1.3 document: JSON Schema draft 7 (the dialect OpenRPC's
    /// meta-schema validates), the definitions under `#/components/schemas`.
    pub(super) fn openrpc() -> Self {
        Self {
            #[cfg(feature = "schema")]
            generator: schemars::generate::SchemaSettings::draft07()
                .with(|settings| {
                    settings.definitions_path = "/components/schemas".into();
                    settings.meta_schema = None;
                })
                .into_generator(),
        }
    }

    /// Returns a renderer for schemas on their own (an MCP tool's `inputSchema`): JSON Schema
    /// 2020-12, the definitions in `$defs`, and no `format` on numbers (see
    /// [`strip_number_formats`]).
    pub(super) fn standalone() -> Self {
        Self {
            #[cfg(feature = "schema")]
            generator: schemars::generate::SchemaSettings::draft2020_12()
                .with(|settings| settings.meta_schema = None)
                .with_transform(schemars::transform::RecursiveTransform(
                    strip_number_formats,
                ))
                .into_generator(),
        }
    }

    /// Renders the schema as it stands inside a document (a `$ref` for a type that has a
    /// definition).
    pub(super) fn render(&mut self, schema: &SchemaDoc) -> Value {
        match &schema.0 {
            Repr::Any => Value::Object(Map::new()),
            Repr::Json(value) => Value::clone(value),
            #[cfg(feature = "schema")]
            Repr::Of(generate) => {
                let mut schema = generate(&mut self.generator, false);
                self.transform(&mut schema);
                schema.to_value()
            }
        }
    }

    /// Renders the schema on its own: definitions of the types it names inside it.
    pub(super) fn render_root(&mut self, schema: &SchemaDoc) -> Value {
        match &schema.0 {
            #[cfg(feature = "schema")]
            Repr::Of(generate) => generate(&mut self.generator, true).to_value(),
            _ => self.render(schema),
        }
    }

    /// Returns `schema`, or the definition it refers to when it is a `$ref` into this renderer's
    /// definitions.
    pub(super) fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        #[cfg(feature = "schema")]
        if let Some(found) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix("#/components/schemas/"))
            .and_then(|name| self.generator.definitions().get(name))
        {
            return found;
        }
        schema
    }

    /// Returns the definitions of every type a rendered schema named, by name.
    pub(super) fn definitions(mut self) -> Map<String, Value> {
        #[cfg(feature = "schema")]
        return self.generator.take_definitions(true);
        #[cfg(not(feature = "schema"))]
        {
            let _ = &mut self;
            Map::new()
        }
    }

    /// Applies the dialect's transforms (draft 7 has no `prefixItems`, for one), which schemars
    /// applies only to root schemas and definitions.
    #[cfg(feature = "schema")]
    fn transform(&mut self, schema: &mut schemars::Schema) {
        for transform in self.generator.transforms_mut() {
            transform.transform(schema);
        }
    }
}

#[cfg(all(test, feature = "schema"))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn standalone_schemas_have_no_number_formats() {
        let mut renderer = Renderer::standalone();
        let small = renderer.render_root(&SchemaDoc::of::<u8>());
        assert_eq!(small["format"], Value::Null, "{small}");
        assert_eq!(
            (&small["minimum"], &small["maximum"]),
            (&json!(0), &json!(255))
        );
        let ratio = renderer.render(&SchemaDoc::of::<f64>());
        assert_eq!(ratio, json!({ "type": "number" }));
        let maybe = renderer.render_root(&SchemaDoc::of::<Vec<Option<i64>>>());
        assert_eq!(maybe["items"], json!({ "type": ["integer", "null"] }));
        let openrpc = Renderer::openrpc().render(&SchemaDoc::of::<u8>());
        assert_eq!(openrpc["format"], "uint8", "other documents keep them");
    }
}
