use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, NodeStatus, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn node(annotation: Option<&str>, gpus: Option<&str>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some("n1".into()),
            annotations: annotation
                .map(|a| BTreeMap::from([(NODE_VGPU_REGISTER.to_string(), a.to_string())])),
            labels: Some(BTreeMap::from([(
                GPU_PRODUCT_LABEL.to_string(),
                "A100".to_string(),
            )])),
            ..Default::default()
        },
        status: gpus.map(|g| NodeStatus {
            allocatable: Some(BTreeMap::from([(
                NVIDIA_GPU.to_string(),
                Quantity(g.into()),
            )])),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod(limits: &[(&str, &str)], annotations: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    limits: Some(
                        limits
                            .iter()
                            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                            .collect(),
                    ),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn two_devices() -> NodeGpus {
    NodeGpus::from_node(&node(
        Some("g0,10,16384,NVIDIA-T4,true,hami-core:g1,10,16384,NVIDIA-T4,true,hami-core:"),
        None,
    ))
    .unwrap()
    .unwrap()
}

fn share(cores: &str) -> GpuRequest {
    GpuRequest::from_pod(&pod(&[(VGPU_NUMBER, "1"), (VGPU_CORES, cores)], &[]))
        .unwrap()
        .unwrap()
}

#[test]
fn registered_devices_are_read_in_order() {
    let g = two_devices();
    assert_eq!(g.devices.len(), 2);
    assert_eq!(g.devices[1].uuid, "g1");
    assert_eq!(g.devices[1].memory, 16384);
    assert_eq!(g.devices[1].max_shares, 10);
}

#[test]
fn a_bad_register_annotation_names_the_device() {
    let e = NodeGpus::from_node(&node(Some("g0,ten,16384,T4,true,hami-core:"), None)).unwrap_err();
    assert!(e.field.ends_with(NODE_VGPU_REGISTER), "{e}");
    assert!(
        e.message.contains("device 0") && e.message.contains("count"),
        "{e}"
    );
}

#[test]
fn nvidia_gpus_become_whole_devices_of_the_labelled_model() {
    let g = NodeGpus::from_node(&node(None, Some("4")))
        .unwrap()
        .unwrap();
    assert_eq!(g.devices.len(), 4);
    assert_eq!(g.devices[0].model, "A100");
    assert!(NodeGpus::from_node(&node(None, None)).unwrap().is_none());
}

#[test]
fn requests_read_shares_and_whole_gpus() {
    let r = share("30");
    assert_eq!((r.count, r.cores), (1, 300));
    assert!(r.is_share());
    let whole = GpuRequest::from_pod(&pod(&[(NVIDIA_GPU, "2")], &[]))
        .unwrap()
        .unwrap();
    assert_eq!((whole.count, whole.cores), (2, 1000));
    let default_cores = GpuRequest::from_pod(&pod(&[(VGPU_NUMBER, "1")], &[]))
        .unwrap()
        .unwrap();
    assert!(!default_cores.is_share());
    assert!(
        GpuRequest::from_pod(&pod(&[("cpu", "1")], &[]))
            .unwrap()
            .is_none()
    );
    let bad = GpuRequest::from_pod(&pod(&[(VGPU_CORES, "lots"), (VGPU_NUMBER, "1")], &[]));
    assert!(bad.unwrap_err().field.contains(VGPU_CORES));
}

#[test]
fn a_share_must_fit_on_one_device() {
    let mut g = two_devices();
    g.take(&[0], &share("50"));
    g.take(&[1], &share("50"));
    // 100% free in all, but no single device has 80%.
    assert!(!g.can_fit(&share("80")));
    assert!(g.can_fit(&share("50")));
}

#[test]
fn best_fit_fills_the_fullest_device_that_fits() {
    let mut g = two_devices();
    g.take(&[1], &share("60"));
    assert_eq!(g.best_fit(&share("40")), Some(vec![1]));
    assert_eq!(g.best_fit(&share("50")), Some(vec![0]));
    g.release(&[1], &share("60"));
    assert_eq!(g.devices[1].used_cores, 0);
}

#[test]
fn a_whole_device_is_taken_alone() {
    let mut g = two_devices();
    g.take(&[0], &share("10"));
    let whole = GpuRequest::from_pod(&pod(&[(VGPU_NUMBER, "1"), (VGPU_CORES, "100")], &[]))
        .unwrap()
        .unwrap();
    assert_eq!(g.best_fit(&whole), Some(vec![1]));
    let two = GpuRequest { count: 2, ..whole };
    assert!(!g.can_fit(&two));
}

#[test]
fn memory_and_models_limit_devices() {
    let g = two_devices();
    let big = GpuRequest::from_pod(&pod(
        &[
            (VGPU_NUMBER, "1"),
            (VGPU_CORES, "10"),
            (VGPU_MEMORY, "20000"),
        ],
        &[],
    ))
    .unwrap()
    .unwrap();
    assert!(!g.can_fit(&big));
    let a100 = GpuRequest::from_pod(&pod(&[(VGPU_NUMBER, "1")], &[(USE_GPU_TYPE, "a100,v100")]))
        .unwrap()
        .unwrap();
    assert!(!g.can_fit(&a100));
    let not_t4 = GpuRequest::from_pod(&pod(&[(VGPU_NUMBER, "1")], &[(NOUSE_GPU_TYPE, "t4")]))
        .unwrap()
        .unwrap();
    assert!(!g.can_fit(&not_t4));
    let t4 = GpuRequest::from_pod(&pod(&[(VGPU_NUMBER, "1")], &[(USE_GPU_TYPE, "T4")]))
        .unwrap()
        .unwrap();
    assert!(g.can_fit(&t4));
}

#[test]
fn the_assignment_annotation_reads_back() {
    let g = two_devices();
    let r = share("25");
    let text = g.assignment(&[1], &r);
    assert_eq!(text, "g1,NVIDIA-T4,0,25:");
    assert_eq!(g.indices_of(&text), vec![1]);
}
