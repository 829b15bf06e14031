"""Authentication (TLS contexts, SASL PLAIN and SCRAM, principals) and authorization
(the AclAuthorizer over the metadata store), shared by the broker and kafpy's client."""
