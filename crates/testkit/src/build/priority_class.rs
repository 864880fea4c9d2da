//! PriorityClasses.

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::scheduling::v1::PriorityClass;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::AddTo;

/// A PriorityClass.
#[derive(Debug, Clone)]
pub struct PriorityClassBuilder {
    name: String,
    value: i32,
    global_default: bool,
}

/// A priority class `name` with `value`.
pub fn priority_class(name: &str, value: i32) -> PriorityClassBuilder {
    PriorityClassBuilder {
        name: name.to_string(),
        value,
        global_default: false,
    }
}

impl PriorityClassBuilder {
    /// Marks it the global default.
    pub fn global_default(mut self) -> Self {
        self.global_default = true;
        self
    }
}

impl AddTo for PriorityClassBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.priority_classes.push(PriorityClass {
            metadata: ObjectMeta {
                name: Some(self.name),
                ..Default::default()
            },
            value: self.value,
            global_default: self.global_default.then_some(true),
            ..Default::default()
        });
    }
}
