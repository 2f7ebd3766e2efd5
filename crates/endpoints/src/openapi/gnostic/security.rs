//! Security schemes and requirements of gnostic's `openapi.v2` messages.

use super::*;

#[derive(Clone, PartialEq, Message)]
pub struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct BasicAuthenticationSecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, repeated, tag = "3")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `Oauth2AccessCodeSecurity`; the other three OAuth2 flows are subsets of it with their own
/// tags, below.
#[derive(Clone, PartialEq, Message)]
pub struct Oauth2AccessCodeSecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub flow: String,
    #[prost(message, optional, tag = "3")]
    pub scopes: Option<Oauth2Scopes>,
    #[prost(string, tag = "4")]
    pub authorization_url: String,
    #[prost(string, tag = "5")]
    pub token_url: String,
    #[prost(string, tag = "6")]
    pub description: String,
    #[prost(message, repeated, tag = "7")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `Oauth2ApplicationSecurity` and `Oauth2PasswordSecurity` (same fields and tags).
#[derive(Clone, PartialEq, Message)]
pub struct Oauth2TokenUrlSecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub flow: String,
    #[prost(message, optional, tag = "3")]
    pub scopes: Option<Oauth2Scopes>,
    #[prost(string, tag = "4")]
    pub token_url: String,
    #[prost(string, tag = "5")]
    pub description: String,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Oauth2ImplicitSecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub flow: String,
    #[prost(message, optional, tag = "3")]
    pub scopes: Option<Oauth2Scopes>,
    #[prost(string, tag = "4")]
    pub authorization_url: String,
    #[prost(string, tag = "5")]
    pub description: String,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Oauth2Scopes {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedString>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SecurityDefinitionsItem {
    #[prost(oneof = "security_definitions_item::Oneof", tags = "1, 2, 3, 4, 5, 6")]
    pub oneof: Option<security_definitions_item::Oneof>,
}

pub mod security_definitions_item {
    use super::*;
    #[derive(Clone, PartialEq, Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        BasicAuthenticationSecurity(BasicAuthenticationSecurity),
        #[prost(message, tag = "2")]
        ApiKeySecurity(ApiKeySecurity),
        #[prost(message, tag = "3")]
        Oauth2ImplicitSecurity(Oauth2ImplicitSecurity),
        #[prost(message, tag = "4")]
        Oauth2PasswordSecurity(Oauth2TokenUrlSecurity),
        #[prost(message, tag = "5")]
        Oauth2ApplicationSecurity(Oauth2TokenUrlSecurity),
        #[prost(message, tag = "6")]
        Oauth2AccessCodeSecurity(Oauth2AccessCodeSecurity),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedStringArray>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}
