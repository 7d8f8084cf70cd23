package estate

import (
	"fmt"
	"strings"
	"time"
)

// actionKey names an action of a service.
type actionKey struct{ service, action string }

// An action answers a request the estate admitted: for the query
// protocols the XML inside the answer's result element, for the JSON
// protocols a value to marshal; or an *apiError.
type action func(e *Estate, req *request) (any, error)

// actions are the actions the estate answers.
var actions = map[actionKey]action{
	{"ec2", "DescribeInstances"}:         describeInstances,
	{"ec2", "DescribeVpcs"}:              describeVpcs,
	{"ec2", "DescribeSubnets"}:           describeSubnets,
	{"ec2", "DescribeSecurityGroups"}:    describeSecurityGroups,
	{"iam", "ListRoles"}:                 listRoles,
	{"iam", "GetRole"}:                   getRole,
	{"secretsmanager", "ListSecrets"}:    listSecrets,
	{"secretsmanager", "DescribeSecret"}: describeSecret,
	{"dynamodb", "ListTables"}:           listTables,
	{"dynamodb", "DescribeTable"}:        describeTable,
}

// Actions returns the scopes of the actions an estate answers, with the
// service and action set.
func Actions() []Scope {
	out := make([]Scope, 0, len(actions))
	for k := range actions {
		out = append(out, Scope{Service: k.service, Action: k.action})
	}
	return out
}

// ec2Page reads the paging parameters of an EC2 describe: without
// MaxResults, EC2 answers every item in one page.
func ec2Page(req *request, n int) (from, to int, next string, err error) {
	size, err := req.intParam("MaxResults", max(n, 1))
	if err != nil {
		return 0, 0, "", err
	}
	start, err := parseToken(req, req.form.Get("NextToken"))
	if err != nil {
		return 0, 0, "", err
	}
	from, to, next = page(n, start, size)
	return from, to, next, nil
}

func nextTokenXML(next string) string {
	if next == "" {
		return ""
	}
	return "  <nextToken>" + next + "</nextToken>\n"
}

func describeInstances(e *Estate, req *request) (any, error) {
	g := e.regionalOf(req.scope.Account, req.scope.Region)
	from, to, next, err := ec2Page(req, len(g.instances))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("  <reservationSet>\n")
	for _, in := range g.instances[from:to] {
		fmt.Fprintf(&b, `    <item><reservationId>%s</reservationId><ownerId>%s</ownerId><groupSet/><instancesSet><item>`+
			`<instanceId>%s</instanceId><imageId>%s</imageId><instanceState><code>16</code><name>running</name></instanceState>`+
			`<instanceType>%s</instanceType><placement><availabilityZone>%s</availabilityZone></placement>`+
			`<privateIpAddress>%s</privateIpAddress><subnetId>%s</subnetId><vpcId>%s</vpcId>`+
			`<tagSet><item><key>Name</key><value>%s</value></item></tagSet></item></instancesSet></item>`+"\n",
			in.reservation, req.scope.Account, in.id, in.image, in.kind, in.zone, in.ip, in.subnet, in.vpc, in.name)
	}
	b.WriteString("  </reservationSet>\n")
	b.WriteString(nextTokenXML(next))
	return b.String(), nil
}

func describeVpcs(e *Estate, req *request) (any, error) {
	g := e.regionalOf(req.scope.Account, req.scope.Region)
	from, to, next, err := ec2Page(req, len(g.vpcs))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("  <vpcSet>\n")
	for _, v := range g.vpcs[from:to] {
		fmt.Fprintf(&b, "    <item><vpcId>%s</vpcId><ownerId>%s</ownerId><state>available</state><cidrBlock>%s</cidrBlock><isDefault>false</isDefault></item>\n",
			v.id, req.scope.Account, v.cidr)
	}
	b.WriteString("  </vpcSet>\n")
	b.WriteString(nextTokenXML(next))
	return b.String(), nil
}

func describeSubnets(e *Estate, req *request) (any, error) {
	g := e.regionalOf(req.scope.Account, req.scope.Region)
	from, to, next, err := ec2Page(req, len(g.subnets))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("  <subnetSet>\n")
	for _, s := range g.subnets[from:to] {
		fmt.Fprintf(&b, "    <item><subnetId>%s</subnetId><vpcId>%s</vpcId><state>available</state><cidrBlock>%s</cidrBlock>"+
			"<availabilityZone>%s</availabilityZone><availableIpAddressCount>251</availableIpAddressCount><ownerId>%s</ownerId></item>\n",
			s.id, s.vpc, s.cidr, s.zone, req.scope.Account)
	}
	b.WriteString("  </subnetSet>\n")
	b.WriteString(nextTokenXML(next))
	return b.String(), nil
}

func describeSecurityGroups(e *Estate, req *request) (any, error) {
	g := e.regionalOf(req.scope.Account, req.scope.Region)
	from, to, next, err := ec2Page(req, len(g.groups))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("  <securityGroupInfo>\n")
	for _, sg := range g.groups[from:to] {
		fmt.Fprintf(&b, "    <item><ownerId>%s</ownerId><groupId>%s</groupId><groupName>%s</groupName>"+
			"<groupDescription>%s</groupDescription><vpcId>%s</vpcId><ipPermissions/><ipPermissionsEgress/></item>\n",
			req.scope.Account, sg.id, sg.name, sg.name+" servers", sg.vpc)
	}
	b.WriteString("  </securityGroupInfo>\n")
	b.WriteString(nextTokenXML(next))
	return b.String(), nil
}

// trustPolicy is every role's trust policy, URL-encoded as IAM answers it.
const trustPolicy = "%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%7B%22Effect%22%3A%22Allow%22%2C" +
	"%22Principal%22%3A%7B%22Service%22%3A%22ec2.amazonaws.com%22%7D%2C%22Action%22%3A%22sts%3AAssumeRole%22%7D%5D%7D"

func roleXML(r role, indent string, detail bool) string {
	s := fmt.Sprintf("%s<Path>/</Path><RoleName>%s</RoleName><RoleId>%s</RoleId><Arn>%s</Arn><CreateDate>%s</CreateDate>"+
		"<AssumeRolePolicyDocument>%s</AssumeRolePolicyDocument><MaxSessionDuration>3600</MaxSessionDuration>",
		indent, r.name, r.id, r.arn, r.created.Format(time.RFC3339), trustPolicy)
	if detail {
		s += "<RoleLastUsed><Region>us-east-1</Region><LastUsedDate>" + r.created.AddDate(0, 1, 0).Format(time.RFC3339) + "</LastUsedDate></RoleLastUsed>"
	}
	return s
}

func listRoles(e *Estate, req *request) (any, error) {
	g := e.globalOf(req.scope.Account)
	size, err := req.intParam("MaxItems", 100)
	if err != nil {
		return nil, err
	}
	start, err := parseToken(req, req.form.Get("Marker"))
	if err != nil {
		return nil, err
	}
	from, to, next := page(len(g.roles), start, size)
	var b strings.Builder
	fmt.Fprintf(&b, "    <IsTruncated>%t</IsTruncated>\n", next != "")
	if next != "" {
		fmt.Fprintf(&b, "    <Marker>%s</Marker>\n", next)
	}
	b.WriteString("    <Roles>\n")
	for _, r := range g.roles[from:to] {
		b.WriteString(roleXML(r, "      <member>", false) + "</member>\n")
	}
	b.WriteString("    </Roles>\n")
	return b.String(), nil
}

func getRole(e *Estate, req *request) (any, error) {
	name := req.form.Get("RoleName")
	for _, r := range e.globalOf(req.scope.Account).roles {
		if r.name == name {
			return roleXML(r, "    <Role>", true) + "</Role>\n", nil
		}
	}
	return nil, &apiError{404, "NoSuchEntity", fmt.Sprintf("The role with name %s cannot be found.", name)}
}

// epochSeconds is how the JSON protocols write a timestamp.
func epochSeconds(t time.Time) float64 { return float64(t.Unix()) }

type secretEntry struct {
	ARN             string  `json:"ARN"`
	Name            string  `json:"Name"`
	Description     string  `json:"Description"`
	LastChangedDate float64 `json:"LastChangedDate"`
	CreatedDate     float64 `json:"CreatedDate"`
	RotationEnabled bool    `json:"RotationEnabled"`
}

func secretJSON(s secret) secretEntry {
	return secretEntry{ARN: s.arn, Name: s.name, Description: "credentials of " + s.name,
		LastChangedDate: epochSeconds(s.changed), CreatedDate: epochSeconds(s.changed.AddDate(0, -1, 0))}
}

func listSecrets(e *Estate, req *request) (any, error) {
	var in struct {
		MaxResults int
		NextToken  string
	}
	if err := req.decode(&in); err != nil {
		return nil, err
	}
	start, err := parseToken(req, in.NextToken)
	if err != nil {
		return nil, err
	}
	if in.MaxResults <= 0 {
		in.MaxResults = 100
	}
	g := e.regionalOf(req.scope.Account, req.scope.Region)
	from, to, next := page(len(g.secrets), start, in.MaxResults)
	out := struct {
		SecretList []secretEntry
		NextToken  string `json:",omitempty"`
	}{SecretList: []secretEntry{}, NextToken: next}
	for _, s := range g.secrets[from:to] {
		out.SecretList = append(out.SecretList, secretJSON(s))
	}
	return out, nil
}

func describeSecret(e *Estate, req *request) (any, error) {
	var in struct{ SecretId string }
	if err := req.decode(&in); err != nil {
		return nil, err
	}
	for _, s := range e.regionalOf(req.scope.Account, req.scope.Region).secrets {
		if s.name == in.SecretId || s.arn == in.SecretId {
			return secretJSON(s), nil
		}
	}
	return nil, &apiError{400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret."}
}

func listTables(e *Estate, req *request) (any, error) {
	var in struct {
		Limit                   int
		ExclusiveStartTableName string
	}
	if err := req.decode(&in); err != nil {
		return nil, err
	}
	if in.Limit <= 0 {
		in.Limit = 100
	}
	g := e.regionalOf(req.scope.Account, req.scope.Region)
	start := 0
	if in.ExclusiveStartTableName != "" {
		start = len(g.tables)
		for i, t := range g.tables {
			if t.name == in.ExclusiveStartTableName {
				start = i + 1
				break
			}
		}
	}
	from, to, next := page(len(g.tables), start, in.Limit)
	out := struct {
		TableNames             []string
		LastEvaluatedTableName string `json:",omitempty"`
	}{TableNames: []string{}}
	for _, t := range g.tables[from:to] {
		out.TableNames = append(out.TableNames, t.name)
	}
	if next != "" {
		out.LastEvaluatedTableName = g.tables[to-1].name
	}
	return out, nil
}

func describeTable(e *Estate, req *request) (any, error) {
	var in struct{ TableName string }
	if err := req.decode(&in); err != nil {
		return nil, err
	}
	type key struct{ AttributeName, KeyType string }
	type attr struct{ AttributeName, AttributeType string }
	for _, t := range e.regionalOf(req.scope.Account, req.scope.Region).tables {
		if t.name == in.TableName || t.arn == in.TableName {
			return map[string]any{"Table": map[string]any{
				"TableName": t.name, "TableArn": t.arn, "TableId": t.id, "TableStatus": "ACTIVE",
				"ItemCount": t.items, "TableSizeBytes": t.items * 212, "CreationDateTime": epochSeconds(t.created),
				"KeySchema":            []key{{"pk", "HASH"}},
				"AttributeDefinitions": []attr{{"pk", "S"}},
				"BillingModeSummary":   map[string]string{"BillingMode": "PAY_PER_REQUEST"},
			}}, nil
		}
	}
	return nil, &apiError{400, "ResourceNotFoundException", "Requested resource not found: Table: " + in.TableName + " not found"}
}
