use super::*;

#[test]
fn kinds_guess_their_resources() {
    assert_eq!(guess_resource("ConfigMap"), "configmaps");
    assert_eq!(guess_resource("Ingress"), "ingresses");
    assert_eq!(guess_resource("NetworkPolicy"), "networkpolicies");
    assert_eq!(guess_resource("Gateway"), "gateways");
}
